package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

const (
	pkgAppmain  = "github.com/kgen-dev/kgen/runtime/appmain"
	pkgEmbedded = "github.com/kgen-dev/kgen/runtime/embedded"
)

// app writes kgen_app.gen.go, the runner behind generated mains: like every
// regenerated file it comes from jennifer, so templates are left for the
// files a user owns.
func (e *emitter) app() ([]byte, error) {
	f := e.newFile()
	f.ImportName(pkgAppmain, "appmain")
	f.ImportName(pkgEmbedded, "embedded")

	f.Commentf("%s is how the application connects and runs (appmain.Config).", idConfig)
	f.Comment("RegisterFlags fills it from command-line flags, whose defaults come from")
	f.Commentf("KGEN_* environment variables; an empty AppID means %s.", idAppID)
	f.Type().Id(idConfig).Op("=").Qual(pkgAppmain, "Config")

	topics := jen.Dict{}
	for _, t := range e.g.Topics {
		if t.Repartition {
			continue // the app creates its own
		}
		n := t.Partitions
		if n == 0 {
			n = defaultTestPartitions
		}
		topics[jen.Id(t.Go.Const)] = jen.Lit(n)
	}
	f.Commentf("%s maps every topic of %s to its partition count (%d where the", idTopics, schema.FileName, defaultTestPartitions)
	f.Comment("spec gives none, as in the test driver): what the embedded broker creates.")
	f.Var().Id(idTopics).Op("=").Map(jen.String()).Int32().Values(topics)

	// Configs only where the spec gives some, so that an application
	// without any has no empty map to read.
	configs := jen.Dict{}
	for _, t := range e.g.Topics {
		if t.Repartition || len(t.Configs) == 0 {
			continue
		}
		kv := jen.Dict{}
		for _, c := range t.Configs {
			kv[jen.Lit(c.Key.Value)] = jen.Lit(c.Value.Value)
		}
		configs[jen.Id(t.Go.Const)] = jen.Values(kv)
	}
	devConfig := jen.Dict{jen.Id("Topics"): jen.Id(idTopics)}
	if len(configs) > 0 {
		f.Commentf("%s are the configs %s gives topics (configs:), which the embedded", idTopicConfigs, schema.FileName)
		f.Comment("broker creates them with, as kgen topics does on a cluster.")
		f.Var().Id(idTopicConfigs).Op("=").Map(jen.String()).Map(jen.String()).String().Values(configs)
		devConfig[jen.Id("TopicConfigs")] = jen.Id(idTopicConfigs)
	}

	f.Commentf("%s starts the in-process development broker with every topic of", idStartDevBroker)
	f.Comment("the application. Close it when done.")
	f.Func().Id(idStartDevBroker).Params().Params(jen.Op("*").Qual(pkgEmbedded, "Broker"), jen.Error()).Block(
		jen.Return(jen.Qual(pkgEmbedded, "Start").Call(jen.Qual(pkgEmbedded, "Config").Values(devConfig))))

	// One Serdes per application value: RegisterSchemas fills in the ids
	// the topology is then built with.
	app := jen.Dict{
		jen.Id("ID"):     jen.Id(idAppID),
		jen.Id("Topics"): jen.Id(idTopics),
		jen.Id("Topology"): jen.Func().Params().Params(jen.Op("*").Qual(pkgStream, "Topology"), jen.Error()).Block(
			jen.Return(jen.Id(idNewTopology).Call(jen.Id("p"), jen.Id("s")))),
	}
	if len(configs) > 0 {
		app[jen.Id("TopicConfigs")] = jen.Id(idTopicConfigs)
	}
	if len(e.confluentSides()) > 0 {
		app[jen.Id("RegisterSchemas")] = jen.Func().Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("cl").Op("*").Qual(pkgSR, "Client")).Error().Block(
			jen.Return(jen.Id(idRegisterSchemas).Call(jen.Id("ctx"), jen.Id("cl"), jen.Op("&").Id("s"))))
	}
	if err := e.queries(f, app); err != nil {
		return nil, err
	}
	f.Commentf("%s describes the application to appmain, with p building its", idApplication)
	f.Comment("processors.")
	f.Func().Id(idApplication).Params(jen.Id("p").Id(idProcessors)).Qual(pkgAppmain, "App").Block(
		jen.Id("s").Op(":=").Id(idDefaultSerdes).Call(),
		jen.Return(jen.Qual(pkgAppmain, "App").Values(app)))

	opts := jen.Id("opts").Op("...").Qual(pkgStream, "Option")
	f.Commentf("%s runs the application until ctx ends (or, with stream.ExitWhenCaughtUp,", idRun)
	f.Comment("until the input is consumed). With no brokers configured it starts the")
	f.Comment("embedded development broker first.")
	f.Func().Id(idRun).Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("cfg").Id(idConfig), jen.Id("p").Id(idProcessors), opts.Clone()).Error().Block(
		jen.Return(jen.Qual(pkgAppmain, "Run").Call(jen.Id("ctx"), jen.Id("cfg"), jen.Id(idApplication).Call(jen.Id("p")), jen.Id("opts").Op("..."))))

	f.Commentf("%s is a complete main function: it reads flags and environment, runs the", idMain)
	f.Comment("application until SIGINT or SIGTERM, and exits with status 1 on failure and")
	f.Comment("2 on bad flags.")
	f.Func().Id(idMain).Params(jen.Id("p").Id(idProcessors), opts.Clone()).Block(
		jen.Qual(pkgAppmain, "Main").Call(jen.Id(idApplication).Call(jen.Id("p")), jen.Id("opts").Op("...")))
	return render(f)
}
