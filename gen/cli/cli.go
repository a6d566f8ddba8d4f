// Package cli is the kgen command line: parsing arguments and printing, with
// the work done by package gen. It is apart from cmd/kgen so tests can run
// commands in-process.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/kgen-dev/kgen/gen"
	"github.com/kgen-dev/kgen/schema"
)

// Exit statuses.
const (
	ExitOK       = 0
	ExitUser     = 1 // a problem in the user's spec, types or arguments; or stale files for diff
	ExitInternal = 2 // kgen itself failed
)

const usage = `kgen generates typed Kafka stream processors from a topology spec (kgen.yaml).

Usage:

	kgen <command> [arguments]

Commands:

	init DIR       create a new project in DIR that builds and passes its tests
	generate [DIR] generate the typed code of DIR/kgen.yaml (default DIR: .)
	check [DIR]    validate DIR/kgen.yaml and its types, generate nothing
	diff [DIR]     show how the generated files differ from what generate would
	               write; exit status 1 when they are stale
	graph [DIR]    print the topology as a Mermaid flowchart (-format dot for Graphviz)
	version        print kgen's version

Typical use: put

	//go:generate go run github.com/kgen-dev/kgen/cmd/kgen generate

in a Go file next to kgen.yaml and run go generate ./...

Exit status: 0 ok, 1 a problem in your files (printed as FILE:LINE:COL: message), 2 kgen failed.
Run "kgen <command> -h" for a command's flags.
`

// Run runs kgen with args (without the program name) and returns the exit
// status.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUser
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	case "version", "-version", "--version":
		fmt.Fprintf(stdout, "kgen %s (generated code contract %d)\n", Version(), gen.ContractVersion)
		return ExitOK
	case "init":
		return cmdInit(rest, stdout, stderr)
	case "generate", "check", "diff", "graph":
		return cmdDir(cmd, rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "kgen: unknown command %q\n\n%s", cmd, usage)
	return ExitUser
}

// Version is kgen's module version from the build, "(devel)" in a checkout.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == "github.com/kgen-dev/kgen" && bi.Main.Version != "" {
			return bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/kgen-dev/kgen" {
				return d.Version
			}
		}
	}
	return "(devel)"
}

var dirHelp = map[string]string{
	"generate": "generate [DIR]: write the generated files for DIR/kgen.yaml (default .), and scaffold\nthe processor files and main that do not exist yet (never overwriting them).",
	"check":    "check [-against REF] [DIR]: validate DIR/kgen.yaml and the record types it names; report every problem.\nWith -against, also report the changes from REF (a spec file or a git revision) that break\nthe state or internal topics of an application already running; exit status 1 when there are any.",
	"diff":     "diff [DIR]: print a diff of the generated files against what generate would write;\nexit status 1 when they differ.",
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
		fs.StringVar(&against, "against", "", "report changes from the spec at `REF` (a spec file or a git revision) that break existing state")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUser
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return ExitUser
	}
	dir := "."
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	p, err := gen.Load(dir)
	if err != nil {
		return report(stderr, err)
	}
	switch cmd {
	case "check":
		fmt.Fprintf(stdout, "%s: ok: %s\n", p.Spec.File, p.Graph.Describe())
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
			return ExitUser
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
		if len(diffs) == 0 {
			return ExitOK
		}
		fmt.Fprint(stdout, strings.Join(diffs, ""))
		fmt.Fprintf(stderr, "kgen: generated files in %s are stale: run kgen generate\n", dir)
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
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUser
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return ExitUser
	}
	opts.KgenVersion = Version()
	wrote, err := gen.Init(fs.Arg(0), opts)
	for _, w := range wrote {
		fmt.Fprintf(stdout, "wrote %s\n", w)
	}
	if err != nil {
		return report(stderr, err)
	}
	fmt.Fprintf(stdout, "\nnext:\n\tcd %s\n\tgo test ./...\n\tgo run ./cmd/%s\n", fs.Arg(0), filepath.Base(fs.Arg(0)))
	return ExitOK
}
