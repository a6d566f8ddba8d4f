package dsl

// NilTest exposes nilTest to the tests.
func NilTest[V any]() func(V) bool { return nilTest[V]() }
