package avro

import (
	"encoding/binary"
	"fmt"
)

// ConfluentHeaderLen is the size of the Confluent wire format header: the
// magic byte 0 and the big-endian 4-byte schema registry id.
const ConfluentHeaderLen = 5

// AppendConfluentHeader appends the Confluent wire format header for the
// schema with the given registry id.
func AppendConfluentHeader(dst []byte, schemaID uint32) []byte {
	return binary.BigEndian.AppendUint32(append(dst, 0), schemaID)
}

// ParseConfluentHeader splits a Confluent wire format record value into the
// schema id of its writer and the Avro payload after the header.
func ParseConfluentHeader(b []byte) (schemaID uint32, payload []byte, err error) {
	if len(b) < ConfluentHeaderLen {
		return 0, nil, fmt.Errorf("confluent wire format: %d bytes, shorter than the %d-byte header", len(b), ConfluentHeaderLen)
	}
	if b[0] != 0 {
		return 0, nil, fmt.Errorf("confluent wire format: magic byte 0x%02x, want 0x00", b[0])
	}
	return binary.BigEndian.Uint32(b[1:5]), b[5:], nil
}

// CheckSchemaID is what a generated Confluent serde calls on the id it finds:
// kgen decodes with the writer schema it was generated from (no schema
// resolution yet), so any other id is an error.
func CheckSchemaID(got, want uint32) error {
	if got != want {
		return fmt.Errorf("confluent wire format: schema id %d, want %d (schema resolution is not supported)", got, want)
	}
	return nil
}
