package queryapi

import (
	"encoding/json"
	"sort"
)

// GeneratedMark marks a document OpenAPI wrote (its "x-generated-by"), so
// that the generator knows a file of that name is its own to replace or
// remove.
const GeneratedMark = "kgen, from kgen.yaml: do not edit"

// StoreDoc describes one queryable store for the OpenAPI document: the
// JSON Schemas of its keys and values as the API writes them.
type StoreDoc struct {
	Name string
	// Kind is "keyvalue" (or ""), "window", "session" or "versioned".
	Kind  string
	Key   map[string]any
	Value map[string]any
	// Stamped says a key-value store's answers carry each value's
	// timestamp (StampedKeyValue).
	Stamped bool
}

// OpenAPI returns the OpenAPI 3.0 document of an application's query
// endpoints, one path per store and read, with every answer's schema.
func OpenAPI(app string, stores []StoreDoc) ([]byte, error) {
	stores = append([]StoreDoc(nil), stores...)
	sort.Slice(stores, func(i, j int) bool { return stores[i].Name < stores[j].Name })
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	obj := func(props map[string]any, required ...string) map[string]any {
		o := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			o["required"] = required
		}
		return o
	}
	instance := obj(map[string]any{"id": map[string]any{"type": "string"}, "address": map[string]any{"type": "string"}}, "id")
	schemas := map[string]any{
		"Instance": instance,
		"Task":     obj(map[string]any{"Subtopology": map[string]any{"type": "integer"}, "Partition": map[string]any{"type": "integer"}}, "Subtopology", "Partition"),
		"Served": obj(map[string]any{
			"instance": ref("Instance"), "task": ref("Task"),
			"stale": map[string]any{"type": "boolean"}, "lag": map[string]any{"type": "integer", "format": "int64"},
			// A global table's answers: the instance asked holds it all.
			"global": map[string]any{"type": "boolean"},
		}, "instance", "task", "stale", "lag"),
		"Error": obj(map[string]any{
			"error": map[string]any{"type": "string"}, "retry": map[string]any{"type": "boolean"}, "owner": ref("Instance"),
		}, "error"),
		"Missing": obj(map[string]any{
			"partition": map[string]any{"type": "integer", "format": "int32"}, "error": map[string]any{"type": "string"},
			"owner": ref("Instance"), "retry": map[string]any{"type": "boolean"},
		}, "partition", "error", "retry"),
	}
	errResp := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": ref("Error")}}}
	}
	errors := map[string]any{
		"400": errResp("the key (or a parameter) does not parse; the message names the problem"),
		"401": errResp("the ops token is missing or wrong"),
		"421": errResp("another instance holds the key and it could not be forwarded there"),
		"503": map[string]any{"description": "no instance may answer now (restoring, moving, owner unreachable): retry",
			"headers": map[string]any{"Retry-After": map[string]any{"schema": map[string]any{"type": "integer"}}},
			"content": map[string]any{"application/json": map[string]any{"schema": ref("Error")}}},
	}
	with := func(ok map[string]any, extra ...string) map[string]any {
		r := map[string]any{"200": ok}
		for k, v := range errors {
			r[k] = v
		}
		for _, code := range extra {
			r[code] = errResp("no such value")
		}
		return r
	}
	query := func(name, desc string, schema map[string]any) map[string]any {
		return map[string]any{"name": name, "in": "query", "required": false, "description": desc, "schema": schema}
	}
	stale := query("stale", "also answer from standbys and restoring copies (Served says so)", map[string]any{"type": "boolean"})
	paths := map[string]any{}
	for _, s := range stores {
		id := goName(s.Name)
		key, value := "Key"+id, "Value"+id
		schemas[key], schemas[value] = s.Key, s.Value
		answer := map[string]any{"key": ref(key), "value": ref(value), "served": ref("Served")}
		entry := map[string]any{"key": ref(key), "value": ref(value)}
		if s.Stamped {
			stamp := map[string]any{"type": "integer", "format": "int64", "description": "the time of the record that last updated the value, milliseconds since the epoch"}
			answer["timestamp"], entry["timestamp"] = stamp, stamp
		}
		required := []string{"key", "value"}
		if s.Stamped {
			required = append(required, "timestamp")
		}
		schemas["Value"+id+"Answer"] = obj(answer, append(required, "served")...)
		schemas["Entries"+id+"Answer"] = obj(map[string]any{
			"entries":   map[string]any{"type": "array", "items": obj(entry, required...)},
			"served":    map[string]any{"type": "array", "items": ref("Served")},
			"missing":   map[string]any{"type": "array", "items": ref("Missing")},
			"truncated": map[string]any{"type": "boolean"},
			"next":      ref(key),
		}, "entries", "served", "missing", "truncated")
		jsonOK := func(desc, schema string) map[string]any {
			return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": ref(schema)}}}
		}
		text := map[string]any{"type": "string"}
		keyParam := map[string]any{"name": "key", "in": "path", "required": true, "description": "the key as text: a string as is, numbers in decimal, records as JSON", "schema": text}
		switch s.Kind {
		case "window":
			schemas["Windows"+id+"Answer"] = obj(map[string]any{"key": ref(key), "served": ref("Served"),
				"windows": map[string]any{"type": "array", "items": obj(map[string]any{"start": map[string]any{"type": "integer", "format": "int64"}, "value": ref(value)}, "start", "value")},
			}, "key", "windows", "served")
			bound := map[string]any{"type": "string"}
			paths["/v1/stores/"+s.Name+"/keys/{key}/windows"] = map[string]any{"get": map[string]any{
				"operationId": "windows" + id,
				"summary":     "The windows of a key of store " + s.Name + " starting in [from, to], from the instance holding it",
				"parameters": []any{keyParam,
					query("from", "earliest window start: milliseconds since the epoch or RFC 3339; none: unbounded", bound),
					query("to", "latest window start, likewise", bound), stale},
				"responses": with(jsonOK("the windows, by start", "Windows"+id+"Answer")),
			}}
			continue
		case "session":
			ms := map[string]any{"type": "integer", "format": "int64"}
			schemas["Sessions"+id+"Answer"] = obj(map[string]any{"key": ref(key), "served": ref("Served"),
				"sessions": map[string]any{"type": "array", "items": obj(map[string]any{"start": ms, "end": ms, "value": ref(value)}, "start", "end", "value")},
			}, "key", "sessions", "served")
			paths["/v1/stores/"+s.Name+"/keys/{key}/sessions"] = map[string]any{"get": map[string]any{
				"operationId": "sessions" + id,
				"summary":     "The sessions of a key of store " + s.Name + ", from the instance holding it",
				"parameters":  []any{keyParam, stale},
				"responses":   with(jsonOK("the sessions, by start", "Sessions"+id+"Answer")),
			}}
			continue
		case "versioned":
			ms := map[string]any{"type": "integer", "format": "int64"}
			schemas["Version"+id+"Answer"] = obj(map[string]any{"key": ref(key), "value": ref(value), "served": ref("Served"),
				"validFrom": ms, "validTo": ms,
			}, "key", "value", "validFrom", "served")
			paths["/v1/stores/"+s.Name+"/keys/{key}"] = map[string]any{"get": map[string]any{
				"operationId": "get" + id,
				"summary":     "The latest version of a key of versioned store " + s.Name + ", or the one valid at asOf, from the instance holding it",
				"parameters": []any{keyParam,
					query("asOf", "the time the version asked for was valid at: milliseconds since the epoch or RFC 3339; none: the latest", map[string]any{"type": "string"}),
					stale},
				"responses": with(jsonOK("the version, valid from validFrom to validTo (exclusive; none for the latest)", "Version"+id+"Answer"), "404"),
			}}
			continue
		}
		paths["/v1/stores/"+s.Name+"/keys/{key}"] = map[string]any{"get": map[string]any{
			"operationId": "get" + id,
			"summary":     "The value of a key of store " + s.Name + ", from the instance holding it",
			"parameters": []any{
				map[string]any{"name": "key", "in": "path", "required": true, "description": "the key as text: a string as is, numbers in decimal, records as JSON", "schema": text},
				stale,
			},
			"responses": with(jsonOK("the value", "Value"+id+"Answer"), "404"),
		}}
		paths["/v1/stores/"+s.Name+"/keys"] = map[string]any{"get": map[string]any{
			"operationId": "entries" + id,
			"summary":     "The entries of store " + s.Name + " held by this instance: all, a range [from, to) or a prefix (by serialized key)",
			"parameters": []any{
				query("from", "range start, inclusive (with to)", text), query("to", "range end, exclusive (with from)", text),
				query("prefix", "keys whose serialized form begins with this key's", text),
				query("limit", "at most this many entries", map[string]any{"type": "integer", "minimum": 1, "maximum": MaxLimit, "default": DefaultLimit}),
				stale,
			},
			"responses": with(jsonOK("the entries found here, and the partitions held elsewhere", "Entries"+id+"Answer")),
		}}
	}
	doc := map[string]any{
		"x-generated-by": GeneratedMark,
		"openapi":        "3.0.3",
		"info": map[string]any{"title": app + " store queries", "version": "1",
			"description": "Read-only interactive queries of the stores of " + app + ", served on its ops endpoints. Keys held by another instance are forwarded there."},
		"paths":      paths,
		"components": map[string]any{"schemas": schemas, "securitySchemes": map[string]any{"token": map[string]any{"type": "http", "scheme": "bearer"}}},
		"security":   []any{map[string]any{"token": []any{}}, map[string]any{}},
	}
	return json.MarshalIndent(doc, "", "  ")
}

// goName turns a store name (word-counts) into a schema name part
// (WordCounts).
func goName(s string) string {
	out := make([]byte, 0, len(s))
	up := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '-' || c == '_' || c == '.':
			up = true
			continue
		case up && c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out)
}
