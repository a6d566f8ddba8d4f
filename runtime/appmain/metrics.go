package appmain

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamprom"
)

// newRegistry is the registry /metrics serves: the app's own metrics
// (streamprom), the Go runtime's and the process's, and the build's.
func newRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
		buildInfo(),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return reg, nil
}

// buildInfo is kgen_build_info: 1, labelled with the kgen version the
// binary was built with and the Go version.
func buildInfo() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "kgen_build_info",
		Help:        "1, labelled with the kgen version the application was built with and the Go version.",
		ConstLabels: prometheus.Labels{"kgen_version": kgenVersion(), "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}

// kgenVersion is the version of the kgen module in the running binary.
func kgenVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	const path = "github.com/kgen-dev/kgen"
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return "(devel)"
			}
			return d.Version
		}
	}
	return "unknown"
}

// registerApp adds the app's metrics to reg.
func registerApp(reg *prometheus.Registry, app *stream.App) error {
	if err := reg.Register(streamprom.NewCollector(app)); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// kafkaClientMetrics is the franz-go hook (plugin/kprom) that counts what
// the app's Kafka clients do (connections, requests, bytes and records
// produced and fetched, by broker) as kgen_kafka_* metrics in reg.
//
// Every client the app creates (one per unit, the admin client, the
// restore consumers) shares the options, so the hook is one object; kprom
// keeps one set of metrics per hook, so the figures are sums over the
// clients. The buffered_* gauges kprom would add read the first client
// only, so they are left out rather than shown wrong.
func kafkaClientMetrics(reg prometheus.Registerer) kgo.Hook {
	return &clientMetrics{Metrics: kprom.NewMetrics("kgen", kprom.Subsystem("kafka"), kprom.Registerer(skipBuffered{reg}))}
}

type clientMetrics struct {
	*kprom.Metrics
	once sync.Once
}

// OnNewClient registers the metrics once, for the first client.
func (c *clientMetrics) OnNewClient(cl *kgo.Client) { c.once.Do(func() { c.Metrics.OnNewClient(cl) }) }

// OnClientClosed keeps the metrics: clients come and go (a restore
// consumer, a unit restarted with a fresh client) while the app runs.
func (c *clientMetrics) OnClientClosed(*kgo.Client) {}

// skipBuffered registers every collector but kprom's buffered_* gauges.
type skipBuffered struct{ prometheus.Registerer }

func (r skipBuffered) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	skip := false
	for d := range ch {
		skip = skip || strings.Contains(d.String(), `_buffered_`)
	}
	if skip {
		return nil
	}
	return r.Registerer.Register(c)
}

func (r skipBuffered) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}
