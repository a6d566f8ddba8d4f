// Package wordcount counts words: processor split breaks sentences into
// lower-case words, keyed by word, and processor count keeps a running count
// per word in store "counts" and sends each new count to topic word-counts.
package wordcount

//go:generate go tool kgen generate
