package gen

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/schema"
)

// check --against on global tables, versioned tables and foreign-key
// joins: what changes state is breaking, at its place.
func TestCompareTables(t *testing.T) {
	old := `version: 1
app: a
topics:
  in: {key: string, value: string}
  countries: {key: string, value: string}
  lines: {key: string, value: string}
  products: {key: string, value: string}
  prices: {key: string, value: string}
operators:
  country-table: {op: globalTable, topic: countries, store: countries}
  named: {op: join, from: [in, country-table], value: string}
  line-table: {op: table, topic: lines, store: lines}
  product-table: {op: table, topic: products, store: products}
  priced: {op: join, from: [line-table, product-table], foreign-key: true, value: string}
  price-table: {op: table, topic: prices, store: prices, versioned: {history: 1h}}
  late: {op: join, from: [in, price-table], value: string, grace: 10s}
`
	for _, tc := range []struct {
		name, new string
		want      []string
	}{
		{"unchanged", old, nil},
		{"grace changed", strings.Replace(old, "grace: 10s", "grace: 20s", 1), nil},
		{"grace removed", strings.Replace(old, ", grace: 10s", "", 1), []string{
			`kgen.yaml:16:9: breaking: join "late" no longer waits 10s (grace:): the stream records waiting in its store late-Buffer are lost, never joined`,
		}},
		{"history", strings.Replace(old, "history: 1h", "history: 2h", 1), []string{
			`kgen.yaml:15:79: breaking: the history of versioned table "price-table" is 2h, was 1h: its store's segments and changelog were made for the old retention (use a new store name)`,
		}},
		{"no longer versioned", strings.Replace(old, ", versioned: {history: 1h}", "", 1), []string{
			`kgen.yaml:15:50: breaking: store "prices" kept the versioned rows of topic prices and now keeps the rows of topic prices: existing entries no longer decode`,
		}},
		{"global join kind", strings.Replace(old, "named: {op: join", "named: {op: leftJoin", 1), []string{
			`kgen.yaml:11:15: safe: join "named" is now leftJoin, was join: it keeps no state of its own (it reads its tables' stores)`,
		}},
		{"global table removed", strings.Replace(strings.Replace(old, "  country-table: {op: globalTable, topic: countries, store: countries}\n", "", 1), "  named: {op: join, from: [in, country-table], value: string}\n", "", 1), []string{
			`kgen.yaml:2:6: safe: store "countries" of global table "country-table" is gone: it had no changelog (it was filled from topic countries), so nothing is left behind`,
		}},
		{"global store's changelog: left out", old + "stores:\n  countries: {key: string, value: string}\n", nil},
		{"table made global", strings.Replace(old, "line-table: {op: table", "line-table: {op: globalTable", 1), []string{
			`kgen.yaml:12:54: safe: store "lines" is now global table "line-table"'s: it is filled from topic lines on every instance (the old store's changelog is left behind)`,
		}},
		{"fk join kind", strings.Replace(old, "priced: {op: join", "priced: {op: leftJoin", 1), []string{
			`kgen.yaml:14:16: breaking: foreign-key join "priced" is now leftJoin, was join: the subscriptions it keeps were sent for the old kind (a leftJoin subscribes rows an inner join does not), so results would not be those of the new kind (use a new name for the join)`,
		}},
		{"fk join no longer by foreign key", strings.Replace(old, "product-table], foreign-key: true, value: string}", "product-table], value: string}", 1), []string{
			`kgen.yaml:14:16: breaking: join "priced" no longer joins by foreign key: its subscriptions in store priced-subscription-store are left behind (use a new name for the join)`,
		}},
		{"join made one by foreign key", old, []string{
			`kgen.yaml:14:70: breaking: join "priced" now joins by foreign key: it starts with no subscriptions, so the left rows already in its table join nothing until each is updated`,
		}},
		{"fk join renamed", strings.ReplaceAll(old, "priced:", "costed:"), []string{
			`kgen.yaml:2:6: breaking: foreign-key join "priced" is gone (renamed or removed): its subscriptions in store priced-subscription-store and the records in flight in a-priced-subscription-registration-repartition and a-priced-subscription-response-repartition are lost`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := old
			switch tc.name {
			case "join made one by foreign key":
				from = strings.Replace(old, "product-table], foreign-key: true, value: string}", "product-table], value: string}", 1)
			case "global store's changelog: left out":
				// Both have no changelog: nothing changed.
				from = old + "stores:\n  countries: {key: string, value: string, changelog: false}\n"
			}
			o, err := schema.Parse("old.yaml", []byte(from))
			if err != nil {
				t.Fatal(err)
			}
			n, err := schema.Parse("kgen.yaml", []byte(tc.new))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range CompareSpecs(o, n) {
				got = append(got, c.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}
