// Package cli is the kgen command line: parsing arguments and printing, with
// the work done by package gen. It is apart from cmd/kgen so tests can run
// commands in-process.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/kgen-dev/kgen/gen"
	"github.com/kgen-dev/kgen/schema"
)

// Exit statuses.
const (
	ExitOK       = 0
	ExitUser     = 1 // a problem in the user's spec or types; or stale files for diff
	ExitUsage    = 2 // a bad command line: unknown command or flag, wrong arguments
	ExitInternal = 3 // kgen itself failed
)

const usage = `kgen generates typed Kafka stream processors and operators from a topology spec (kgen.yaml).

Usage:

	kgen <command> [arguments]

Commands:

	init DIR       create a new project in DIR that builds and passes its tests
	generate [DIR] generate the typed code of DIR/kgen.yaml (default DIR: .)
	check [DIR]    validate DIR/kgen.yaml and its types, generate nothing
	               (-format json for editors and CI)
	diff [DIR]     show how the generated files differ from what generate would
	               write; exit status 1 when they are stale or a scaffold is missing
	graph [DIR]    print the topology as a Mermaid flowchart (-format dot for Graphviz)
	produce TOPIC  write JSON lines from stdin to TOPIC, in the spec's types
	consume TOPIC  print TOPIC's records as JSON lines, in the spec's types
	topics [DIR]   create the spec's topics on a cluster, check those that exist
	               (-dry-run prints the plan)
	version        print kgen's version
	help [CMD]     print this, or a command's usage and flags

Flags may come before or after the arguments.

Typical use: make kgen a tool of your module and put

	//go:generate go tool kgen generate

in a Go file next to kgen.yaml (kgen init does both), then run go generate ./...
Add the tool to a module with: go get -tool github.com/kgen-dev/kgen/cmd/kgen

Exit status: 0 ok, 1 a problem in your files (printed as FILE:LINE:COL: message),
2 a bad command line, 3 kgen itself failed.
Run "kgen help <command>" for a command's flags.
`

// Run runs kgen with args (without the program name) and returns the exit
// status.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "-help", "--help", "help":
		if len(rest) > 0 {
			return cmdHelp(rest, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return ExitOK
	case "version", "-version", "--version":
		fmt.Fprintf(stdout, "kgen %s (generated code contract %d)\n", Version(), gen.ContractVersion)
		return ExitOK
	case "init":
		return cmdInit(rest, stdout, stderr)
	case "generate", "check", "diff", "graph":
		return cmdDir(cmd, rest, stdout, stderr)
	case "produce":
		return cmdProduce(rest, os.Stdin, stdout, stderr)
	case "consume":
		return cmdConsume(rest, stdout, stderr)
	case "topics":
		return cmdTopics(rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "kgen: unknown command %q\n\n%s", cmd, usage)
	return ExitUsage
}

// Version is kgen's module version from the build's information (see
// versionFrom), "(devel)" in a checkout.
func Version() string {
	return versionFrom(debug.ReadBuildInfo())
}

var dirHelp = map[string]string{
	"generate": "generate [DIR]: write the generated files for DIR/kgen.yaml (default .), and scaffold\nthe processor files and main that do not exist yet (never overwriting them).",
	"check":    "check [-format text|json] [-against REF] [DIR]: validate DIR/kgen.yaml and the record types it names; report every problem.\nWith -format json, one JSON object on stdout: {\"ok\", \"summary\", \"diagnostics\": [{\"file\", \"line\", \"column\", \"severity\", \"message\"}]}.\nWith -against, also report the changes from REF (a spec file or a git revision) that break\nthe state or internal topics of an application already running; exit status 1 when there are any.",
	"diff":     "diff [DIR]: print a diff of the generated files against what generate would write;\nexit status 1 when they differ, a scaffold generate would write is missing, or a file of yours\n(factories.go) lacks a method the spec needs or keeps one that no longer compiles.",
	"graph":    "graph [-format mermaid|dot] [DIR]: print the topology as a Mermaid flowchart or a DOT graph.",
}

func cmdDir(cmd string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kgen "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: kgen %s\n", dirHelp[cmd])
		fs.PrintDefaults()
	}
	format := "mermaid"
	if cmd == "graph" {
		fs.StringVar(&format, "format", format, "mermaid or dot")
	}
	var against string
	if cmd == "check" {
		format = "text"
		fs.StringVar(&format, "format", format, "text, or json: one JSON object on stdout, for editors and CI")
		fs.StringVar(&against, "against", "", "report changes from the spec at `REF` (a spec file or a git revision) that break existing state")
	}
	if err := parseInterspersed(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return ExitUsage
	}
	dir := "."
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	if cmd == "check" && format != "text" {
		if format != "json" {
			fmt.Fprintf(stderr, "kgen check: unknown format %q (want text or json)\n", format)
			return ExitUsage
		}
		return checkJSON(dir, stdout)
	}
	p, err := gen.Load(dir)
	if err != nil {
		return report(stderr, err)
	}
	switch cmd {
	case "check":
		// Generating in memory finds what the spec asks of the user's
		// files (factories.go above all) that they lack: the package would
		// not compile, so the spec is not ok yet.
		res, err := p.Generate()
		if err != nil {
			return report(stderr, err)
		}
		if len(res.Notes) > 0 {
			for _, n := range res.Notes {
				fmt.Fprintln(stderr, n)
			}
			printOrphans(p, stderr)
			return ExitUser
		}
		fmt.Fprintf(stdout, "%s: ok: %s\n", p.Spec.File, p.Graph.Describe())
		printOrphans(p, stderr)
		if against != "" {
			return checkAgainst(p, dir, against, stdout, stderr)
		}
		return ExitOK
	case "graph":
		switch format {
		case "mermaid":
			fmt.Fprint(stdout, gen.Mermaid(p.Graph))
		case "dot":
			fmt.Fprint(stdout, gen.DOT(p.Graph))
		default:
			fmt.Fprintf(stderr, "kgen graph: unknown format %q (want mermaid or dot)\n", format)
			return ExitUsage
		}
		return ExitOK
	}
	res, err := p.Generate()
	if err != nil {
		return report(stderr, err)
	}
	if cmd == "diff" {
		diffs, err := res.Stale()
		if err != nil {
			return report(stderr, err)
		}
		missing := missingScaffolds(res)
		if len(diffs) == 0 && len(missing) == 0 && len(res.Notes) == 0 {
			return ExitOK
		}
		fmt.Fprint(stdout, strings.Join(diffs, ""))
		if len(diffs) > 0 {
			fmt.Fprintf(stderr, "kgen: generated files in %s are stale: run kgen generate\n", dir)
		}
		for _, m := range missing {
			fmt.Fprintf(stderr, "kgen: scaffold %s is missing: kgen generate writes it\n", m)
		}
		for _, n := range res.Notes {
			fmt.Fprintln(stderr, n) // files of the user's the package does not compile without
		}
		return ExitUser
	}
	wrote, err := res.Write()
	if err != nil {
		return report(stderr, err)
	}
	for _, w := range wrote {
		fmt.Fprintf(stdout, "wrote %s\n", w)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	printOrphans(p, stderr)
	return ExitOK
}

// report prints err and returns its exit status: user errors are listed one
// per line, anything else is kgen's fault.
func report(stderr io.Writer, err error) int {
	var errs schema.Errors
	if errors.As(err, &errs) {
		fmt.Fprintln(stderr, errs.Error())
		return ExitUser
	}
	fmt.Fprintf(stderr, "kgen: internal error: %v\n", err)
	return ExitInternal
}

func cmdInit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kgen init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts gen.InitOptions
	fs.StringVar(&opts.Module, "module", "", "module path of the new project (default: the directory name)")
	fs.StringVar(&opts.Checkout, "kgen-checkout", "", "kgen source checkout to use through a replace directive (default: the one this kgen was built from, if any)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kgen init [-module PATH] DIR\n\nCreate a new project in DIR: go.mod, kgen.yaml, a record type, a processor and its\ntest, and the generated code. \"go test ./...\" passes in it right away.")
		fs.PrintDefaults()
	}
	if err := parseInterspersed(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return ExitUsage
	}
	opts.KgenVersion = Version()
	wrote, err := gen.Init(fs.Arg(0), opts)
	for _, w := range wrote {
		fmt.Fprintf(stdout, "wrote %s\n", w)
	}
	if err != nil {
		return report(stderr, err)
	}
	fmt.Fprint(stdout, initNext(fs.Arg(0), wrote))
	return ExitOK
}
