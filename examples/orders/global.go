package orders

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/kgen-dev/kgen/runtime/appmain"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

// The spec cannot declare a global table yet (schema/SPEC.md, "Planned"), so
// the global table countries is added here, by hand, to the topology kgen
// generates, and processor add-country reads it through
// stream.GetGlobalTable. This file's NewDriver, App and Main stand for the
// generated NewTestDriver, Application and Main, whose topology lacks it.

// GlobalCountries is the global table of topic countries: every country, by
// code, on every instance.
const GlobalCountries = "countries"

// NewTopologyWithGlobals is NewTopology with the global table countries.
func NewTopologyWithGlobals(p Processors, s Serdes) (*stream.Topology, error) {
	t, err := NewTopology(p, s)
	if err != nil {
		return nil, err
	}
	stream.AddGlobalTable(t, GlobalCountries, TopicCountries, s.CountriesKey, s.CountriesValue, stream.StoreOptions{})
	return t, t.Validate()
}

// NewDriver is NewTestDriver on NewTopologyWithGlobals: a test driver with
// the spec's partition counts (cfg.Partitions, default 4, elsewhere).
func NewDriver(p Processors, cfg streamtest.Config) (*TestDriver, error) {
	if cfg.Partitions == 0 {
		cfg.Partitions = 4
	}
	tp := map[string]int32{TopicCustomers: 3, TopicOrders: 3, TopicPayments: 3}
	for k, v := range cfg.TopicPartitions {
		tp[k] = v
	}
	cfg.TopicPartitions = tp
	if cfg.AppID == "" {
		cfg.AppID = AppID
	}
	s := DefaultSerdes()
	t, err := NewTopologyWithGlobals(p, s)
	if err != nil {
		return nil, err
	}
	d, err := streamtest.New(t, cfg)
	if err != nil {
		return nil, err
	}
	return &TestDriver{d: d, s: s}, nil
}

// PipeCountries writes a country to topic "countries": the global table has
// it at once, on every task.
func (d *TestDriver) PipeCountries(code string, c Country, ts time.Time) error {
	return streamtest.Pipe(d.d, TopicCountries, d.s.CountriesKey, d.s.CountriesValue, code, c, ts)
}

// App is Application with the global table countries.
func App(p Processors) appmain.App {
	s := DefaultSerdes()
	app := Application(p)
	app.RegisterSchemas = func(ctx context.Context, cl *sr.Client) error {
		return RegisterSchemas(ctx, cl, &s)
	}
	app.Topology = func() (*stream.Topology, error) { return NewTopologyWithGlobals(p, s) }
	return app
}

// MainWithGlobals is Main with the global table countries: read flags and
// environment, run until SIGINT or SIGTERM.
func MainWithGlobals(p Processors, opts ...stream.Option) {
	appmain.Main(App(p), opts...)
}
