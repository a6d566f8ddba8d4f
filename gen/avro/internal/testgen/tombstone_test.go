package testgen

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A record with no value (a tombstone: nil bytes) reaches user code as the
// zero record, as with the JSON serde, not as a deserialization failure; an
// empty but present value is still decoded (and fails here, since an
// Address has fields).
func TestTombstoneIsTheZeroRecord(t *testing.T) {
	for name, deserialize := range map[string]func([]byte) (Address, error){
		"avro":      AddressAvroSerde{}.Deserialize,
		"confluent": AddressConfluentSerde{SchemaID: 7}.Deserialize,
	} {
		got, err := deserialize(nil)
		if err != nil {
			t.Errorf("%s: Deserialize(nil): %v, want the zero Address", name, err)
		}
		if diff := cmp.Diff(Address{}, got); diff != "" {
			t.Errorf("%s: Deserialize(nil) (-want +got):\n%s", name, diff)
		}
		if _, err := deserialize([]byte{}); err == nil {
			t.Errorf("%s: Deserialize of an empty, present value: no error, want the decoding failure", name)
		}
	}
}
