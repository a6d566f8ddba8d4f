package gen

import (
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/runtime/queryapi"
)

const pkgQueryAPI = "github.com/kgen-dev/kgen/runtime/queryapi"

// FileOpenAPI is the OpenAPI document of the query endpoints, written
// next to the spec when a store is queryable (and served at
// /v1/openapi.json from the copy in OpenAPIDocument).
const FileOpenAPI = "openapi.json"

// queryable lists the stores the spec serves (queryable: true).
func (e *emitter) queryable() []*StoreNode {
	var out []*StoreNode
	for _, s := range e.g.Stores {
		if s.Store != nil && s.Queryable {
			out = append(out, s)
		}
	}
	return out
}

// Store kinds as the queries serve them (queryapi.StoreDoc's Kind).
const (
	queryKeyValue  = "keyvalue"
	queryWindow    = "window"
	querySession   = "session"
	queryVersioned = "versioned"
)

// queryKind says how a queryable store is read: every kind of store a
// spec can declare has one.
func queryKind(s *StoreNode) string {
	switch {
	case s.Flavor == "versioned":
		return queryVersioned
	case s.WindowKind == "window":
		return queryWindow
	case s.WindowKind == "session":
		return querySession
	}
	return queryKeyValue
}

// openAPI is the OpenAPI document of the queryable stores.
func (e *emitter) openAPI() ([]byte, error) {
	var docs []queryapi.StoreDoc
	for _, s := range e.queryable() {
		docs = append(docs, queryapi.StoreDoc{Name: s.Name.Value, Kind: queryKind(s), Key: jsonSchemaOf(s.KV.Key.Type), Value: jsonSchemaOf(s.KV.Value.Type),
			Stamped: queryKind(s) == queryKeyValue && s.Op != nil && s.Flavor != "global"})
	}
	return queryapi.OpenAPI(e.g.Spec.App.Value, docs)
}

// queries writes QueryHandlers, the typed client and OpenAPIDocument into
// kgen_app.gen.go, and adds the handlers and document to the App.
func (e *emitter) queries(f *jen.File, app jen.Dict) error {
	stores := e.queryable()
	if len(stores) == 0 {
		return nil
	}
	doc, err := e.openAPI()
	if err != nil {
		return err
	}
	f.Commentf("%s is the OpenAPI document of the store query endpoints (%s).", idOpenAPIDocument, FileOpenAPI)
	lit := jen.Lit(string(doc))
	if !strings.Contains(string(doc), "`") {
		lit = jen.Op("`" + string(doc) + "`") // readable, as openapi.json
	}
	f.Const().Id(idOpenAPIDocument).Op("=").Add(lit)

	var body []jen.Code
	body = append(body, jen.Id("srv").Op(":=").Qual(pkgQueryAPI, "Server").Values(jen.Dict{jen.Id("App"): jen.Id("a"), jen.Id("Client"): jen.Id("forward")}),
		jen.Id("out").Op(":=").Map(jen.String()).Qual("net/http", "Handler").Values())
	for i, s := range stores {
		v := jen.Id("v" + itoa(i))
		parse := jen.Qual(pkgQueryAPI, "ParseKey").Types(typeOf(s.KV.Key))
		ks := jen.Id("s").Dot(s.Go.KeySerde)
		check := jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err()))
		switch queryKind(s) {
		case queryVersioned:
			// A versioned table keeps *V, nil a tombstone, which no
			// answer holds.
			body = append(body,
				jen.List(v.Clone(), jen.Err()).Op(":=").Qual(pkgStream, "QueryVersioned").Types(typeOf(s.KV.Key), jen.Op("*").Add(typeOf(s.KV.Value))).Call(jen.Id("a"), jen.Id(s.Go.Const), ks),
				check,
				jen.Id("out").Index(jen.Id(s.Go.Const)).Op("=").Qual(pkgQueryAPI, "Versioned").Call(jen.Id("srv"), v.Clone(), parse, jen.Qual(pkgQueryAPI, "Deref").Types(typeOf(s.KV.Value))))
			continue
		case queryWindow:
			body = append(body,
				jen.List(v.Clone(), jen.Err()).Op(":=").Qual(pkgStream, "QueryWindow").Types(typeOf(s.KV.Key), jen.Qual(pkgState, "ValueAndTimestamp").Types(typeOf(s.KV.Value))).Call(jen.Id("a"), jen.Id(s.Go.Const), ks),
				check,
				jen.Id("out").Index(jen.Id(s.Go.Const)).Op("=").Qual(pkgQueryAPI, "Window").Call(jen.Id("srv"), v.Clone(), parse, jen.Qual(pkgQueryAPI, "UnstampedWindow").Types(typeOf(s.KV.Value))))
			continue
		case querySession:
			body = append(body,
				jen.List(v.Clone(), jen.Err()).Op(":=").Qual(pkgStream, "QuerySession").Types(kvTypes(s.KV)...).Call(jen.Id("a"), jen.Id(s.Go.Const), ks),
				check,
				jen.Id("out").Index(jen.Id(s.Go.Const)).Op("=").Qual(pkgQueryAPI, "Session").Call(jen.Id("srv"), v.Clone(), parse, jen.Qual(pkgQueryAPI, "Plain").Types(typeOf(s.KV.Value))))
			continue
		}
		types := kvTypes(s.KV)
		vs := jen.Id("s").Dot(s.Go.ValueSerde)
		if s.Flavor == "global" && s.Op != nil && len(s.Op.Parents) > 0 && s.Op.Parents[0].Topic != nil {
			// A global table holds its topic's bytes, written with the
			// topic's serdes (globalEmit): read them with the same.
			t := s.Op.Parents[0].Topic
			ks, vs = jen.Id("s").Dot(t.Go.KeySerde), jen.Id("s").Dot(t.Go.ValueSerde)
		}
		handler := jen.Qual(pkgQueryAPI, "KeyValue").Call(jen.Id("srv"), v.Clone(), parse, jen.Qual(pkgQueryAPI, "Plain").Types(typeOf(s.KV.Value)))
		if s.Op != nil && s.Flavor != "global" {
			// A global table keeps its topic's values as they are (no
			// time), and every instance answers every key of it
			// (stream.QueryKeyValue of a global table).
			//
			// A table's or an aggregation's store keeps each row with
			// the time of its last update: answers show it beside.
			types[1] = jen.Qual(pkgDSL, "ValueAndTimestamp").Types(types[1])
			vs = jen.Qual(pkgDSL, "Timestamped").Call(vs)
			handler = jen.Qual(pkgQueryAPI, "StampedKeyValue").Call(jen.Id("srv"), v.Clone(), parse,
				jen.Qual(pkgQueryAPI, "Unstamped").Types(typeOf(s.KV.Value)), jen.Qual(pkgQueryAPI, "Stamp").Types(typeOf(s.KV.Value)))
		}
		body = append(body,
			jen.List(v.Clone(), jen.Err()).Op(":=").Qual(pkgStream, "QueryKeyValue").Types(types...).Call(jen.Id("a"), jen.Id(s.Go.Const), ks, vs),
			check,
			jen.Id("out").Index(jen.Id(s.Go.Const)).Op("=").Add(handler))
	}
	body = append(body, jen.Return(jen.Id("out"), jen.Nil()))
	f.Commentf("%s returns the HTTP handlers of the queryable stores by name, for", idQueryHandlers)
	f.Comment("appmain.App.Queries; forward reaches the other instances.")
	f.Func().Id(idQueryHandlers).Params(jen.Id("a").Op("*").Qual(pkgStream, "App"), jen.Id("forward").Op("*").Qual("net/http", "Client"), jen.Id("s").Id(idSerdes)).
		Params(jen.Map(jen.String()).Qual("net/http", "Handler"), jen.Error()).Block(body...)

	app[jen.Id("Queries")] = jen.Func().Params(jen.Id("a").Op("*").Qual(pkgStream, "App"), jen.Id("forward").Op("*").Qual("net/http", "Client")).
		Params(jen.Map(jen.String()).Qual("net/http", "Handler"), jen.Error()).Block(
		jen.Return(jen.Id(idQueryHandlers).Call(jen.Id("a"), jen.Id("forward"), jen.Id("s"))))
	app[jen.Id("OpenAPI")] = jen.Index().Byte().Call(jen.Id(idOpenAPIDocument))

	f.Commentf("%s reads the queryable stores of a running %s over HTTP, from any", idQueryClient, e.g.Spec.App.Value)
	f.Comment("instance: one that does not hold a key forwards the question to the one")
	f.Comment("that does.")
	f.Type().Id(idQueryClient).Struct(jen.Id("c").Op("*").Qual(pkgQueryAPI, "Client"))
	f.Commentf("%s returns a client of the instance whose ops endpoints are at baseURL", idNewQueryClient)
	f.Comment("(e.g. http://localhost:9090); opts carry the ops token and TLS.")
	f.Func().Id(idNewQueryClient).Params(jen.Id("baseURL").String(), jen.Id("opts").Qual(pkgQueryAPI, "ClientOptions")).Op("*").Id(idQueryClient).Block(
		jen.Return(jen.Op("&").Id(idQueryClient).Values(jen.Qual(pkgQueryAPI, "NewClient").Call(jen.Id("baseURL"), jen.Id("opts")))))
	for _, s := range stores {
		what := "values"
		if s.Op != nil {
			what = "rows of " + s.Op.what()
		}
		if s.Flavor == "global" {
			what += ", on every instance"
		}
		typ, ctor := "KeyValueClient", "KeyValueStore"
		switch queryKind(s) {
		case queryVersioned:
			typ, ctor, what = "VersionedClient", "VersionedStore", "versions of "+what
		case queryWindow:
			typ, ctor, what = "WindowClient", "WindowStore", "windows of "+s.Op.what()
		case querySession:
			typ, ctor, what = "SessionClient", "SessionStore", "sessions of "+s.Op.what()
		}
		f.Commentf("%s reads store %q (%s, keys %s).", s.Go.Accessor, s.Name.Value, what, s.KV.Key.Name)
		f.Func().Params(jen.Id("c").Op("*").Id(idQueryClient)).Id(s.Go.Accessor).Params().
			Op("*").Qual(pkgQueryAPI, typ).Types(kvTypes(s.KV)...).Block(
			jen.Return(jen.Qual(pkgQueryAPI, ctor).Types(kvTypes(s.KV)...).Call(jen.Id("c").Dot("c"), jen.Id(s.Go.Const))))
	}
	return nil
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// jsonSchemaOf is the JSON Schema (OpenAPI 3.0 dialect) of a type as
// encoding/json writes it.
func jsonSchemaOf(t *model.Type) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	switch t.Kind {
	case model.String, model.UUID:
		return map[string]any{"type": "string"}
	case model.Bytes, model.Fixed:
		return map[string]any{"type": "string", "format": "byte"}
	case model.Bool:
		return map[string]any{"type": "boolean"}
	case model.Int32:
		return map[string]any{"type": "integer", "format": "int32"}
	case model.Int64:
		return map[string]any{"type": "integer", "format": "int64"}
	case model.Float32:
		return map[string]any{"type": "number", "format": "float"}
	case model.Float64:
		return map[string]any{"type": "number", "format": "double"}
	case model.Timestamp, model.Date:
		return map[string]any{"type": "string", "format": "date-time"}
	case model.Enum:
		return map[string]any{"type": "string"}
	case model.Array:
		return map[string]any{"type": "array", "items": jsonSchemaOf(t.Elem)}
	case model.Map:
		return map[string]any{"type": "object", "additionalProperties": jsonSchemaOf(t.Elem)}
	case model.Optional:
		s := jsonSchemaOf(t.Elem)
		s["nullable"] = true
		return s
	case model.Record:
		props := map[string]any{}
		for _, fl := range t.Fields {
			name := fl.WireName
			if name == "" {
				name = fl.Name
			}
			props[name] = jsonSchemaOf(fl.Type)
		}
		return map[string]any{"type": "object", "properties": props}
	}
	// Decimals, unions: whatever their JSON encoding is.
	return map[string]any{}
}
