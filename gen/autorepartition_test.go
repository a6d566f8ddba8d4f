package gen

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/schema"
)

// check --against reports a repartition topic the generator inserts before
// a join like an explicit one: gone is breaking (its unread records are
// lost), new is safe.
func TestCompareRekeyedJoins(t *testing.T) {
	old := `version: 1
app: a
topics:
  orders:   {key: string, value: string}
  payments: {key: string, value: int64}
  users:    {key: string, value: string}
  out:      {key: string, value: string}
operators:
  by-order:   {op: selectKey, from: [orders], key: string}
  paid:       {op: join, from: [by-order, payments], value: string, window: {within: 5s}, to: [out]}
  user-table: {op: table, topic: users, store: users}
  by-user:    {op: selectKey, from: [orders], key: string}
  named:      {op: leftJoin, from: [by-user, user-table], value: string, to: [out]}
`
	for _, tc := range []struct {
		name, new string
		want      []string
	}{
		{"unchanged", old, nil},
		{"explicit repartition instead", strings.Replace(strings.Replace(old, "from: [by-order, payments]", "from: [by-order-rp, payments]", 1),
			"  paid:", "  by-order-rp: {op: repartition, from: [by-order]}\n  paid:", 1), []string{
			`kgen.yaml:11:3: breaking: repartition topic a-paid-left-repartition, which the generator inserted before join "paid"'s left side (by-order), is gone: records not yet read from it are lost`,
		}},
		{"key no longer changed", strings.Replace(old, "{op: selectKey, from: [orders], key: string}\n  paid", "{op: filter, from: [orders]}\n  paid", 1), []string{
			`kgen.yaml:10:3: breaking: repartition topic a-paid-left-repartition, which the generator inserted before join "paid"'s left side (by-order), is gone: records not yet read from it are lost`,
		}},
		{"join renamed", strings.ReplaceAll(old, "named", "with-user"), []string{
			`kgen.yaml:2:6: breaking: repartition topic a-named-repartition, which the generator inserted before join "named"'s left side (by-user), is gone: records not yet read from it are lost`,
			`kgen.yaml:13:3: safe: join "with-user"'s left side (by-user) is now read through repartition topic a-with-user-repartition, which the generator inserts as its key may have changed: the application creates it at start`,
		}},
		{"right side re-keyed too", strings.Replace(strings.Replace(old, "from: [by-order, payments]", "from: [by-order, pay-by-order]", 1),
			"  paid:", "  pay-by-order: {op: map, from: [payments], key: string, value: int64}\n  paid:", 1), []string{
			`kgen.yaml:11:3: safe: join "paid"'s right side (pay-by-order) is now read through repartition topic a-paid-right-repartition, which the generator inserts as its key may have changed: the application creates it at start`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := schema.Parse("old.yaml", []byte(old))
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

// The repartition topics inserted before re-keyed join sides are the
// application's own, listed (for kgen topics) with the side they carry.
func TestRepartitionTopicsOfRekeyedJoins(t *testing.T) {
	p, err := Load("../testdata/golden/joins-rekeyed")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rt := range p.Graph.RepartitionTopics() {
		got = append(got, rt.Name+": "+rt.What)
	}
	want := []string{
		`rekeyedjoins-both-left-repartition: operator "both" (join), inserted before "l-by-value": operator "l-by-value" (selectKey) changes the key`,
		`rekeyedjoins-both-right-repartition: operator "both" (join), inserted before "r-by-value": operator "r-by-value" (map) changes the key`,
		`rekeyedjoins-paid-left-repartition: operator "paid" (join), inserted before "by-order": operator "by-order" (selectKey) changes the key`,
		`rekeyedjoins-swapped-repartition: operator "swapped" (join), inserted before "swap": processor "swap" re-keys (rekeys: true)`,
		`rekeyedjoins-with-user-repartition: operator "with-user" (leftJoin), inserted before "by-user": operator "by-user" (selectKey) changes the key`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("repartition topics (-want +got):\n%s", diff)
	}
}
