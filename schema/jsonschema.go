package schema

import _ "embed"

// JSONSchema is the JSON Schema of kgen.yaml, for editors (for example the
// YAML language server: "# yaml-language-server: $schema=...").
//
//go:embed kgen.schema.json
var JSONSchema []byte
