package state_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/statetest"
)

func TestChangelogNotCalledWhenWriteFails(t *testing.T) {
	log := &statetest.Recorder{}
	b := state.NewMemory()
	s := state.NewKeyValueStore("counts", b, serde.String{}, serde.Int64{}, log)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("a", 1); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Put on a closed backend = %v, want state.ErrClosed", err)
	}
	if err := s.Delete("a"); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Delete on a closed backend = %v, want state.ErrClosed", err)
	}
	if len(log.Changes) != 0 {
		t.Errorf("failed writes were logged: %v", log.Changes)
	}
}

func TestTypedErrorsNameTheStore(t *testing.T) {
	b := state.NewMemory()
	if err := b.Put([]byte("k"), []byte("not eight bytes")); err != nil {
		t.Fatal(err)
	}
	s := state.NewKeyValueStore("totals", b, serde.String{}, serde.Int64{}, nil)
	_, _, err := s.Get("k")
	var size *serde.SizeError
	if !errors.As(err, &size) || !strings.Contains(err.Error(), `store "totals"`) {
		t.Errorf("Get of a bad value = %v, want a wrapped *serde.SizeError naming the store", err)
	}
	if _, _, err := s.PutIfAbsent("k", 1); !errors.As(err, &size) {
		t.Errorf("PutIfAbsent over a bad value = %v, want a wrapped *serde.SizeError", err)
	}
	it := must(s.All())
	if it.Next() {
		t.Error("Next over a bad value = true")
	}
	if err := it.Err(); !errors.As(err, &size) || !strings.Contains(err.Error(), `store "totals"`) {
		t.Errorf("iterator Err = %v, want a wrapped *serde.SizeError naming the store", err)
	}
	if err := it.Close(); err != nil {
		t.Error(err)
	}

	failing := state.NewKeyValueStore("j", state.NewMemory(), serde.String{}, serde.JSON[func()]{}, nil)
	if err := failing.Put("k", func() {}); err == nil || !strings.Contains(err.Error(), `store "j"`) {
		t.Errorf("Put of an unserializable value = %v, want an error naming the store", err)
	}
}

func TestName(t *testing.T) {
	if got := state.NewKeyValueStore("counts", state.NewMemory(), serde.String{}, serde.Int64{}, nil).Name(); got != "counts" {
		t.Errorf("Name = %q", got)
	}
}
