package cli

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// parseInterspersed parses fs from args with flags and positional arguments
// in any order ("kgen graph . -format dot" as well as "kgen graph -format
// dot ."); a "--" ends the flags. The positional arguments are fs.Args().
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			positional = append(positional, rest...) // after "--", all positional
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Parse once more, after a "--" so that no positional argument is taken
	// for a flag, to make them fs.Args().
	return fs.Parse(append([]string{"--"}, positional...))
}

// commandUsage is the usage text of every command, for "kgen help CMD" and
// "kgen CMD -h".
var commandUsage = map[string]string{
	"init":     "init [-module PATH] DIR",
	"generate": "generate [DIR]",
	"check":    "check [-format text|json] [DIR]",
	"diff":     "diff [DIR]",
	"graph":    "graph [-format mermaid|dot] [DIR]",
	"produce":  "produce [flags] TOPIC",
	"consume":  "consume [flags] TOPIC",
	"topics":   "topics [flags] [DIR]",
	"version":  "version",
}

// cmdHelp is "kgen help CMD": the command's usage and flags on stdout.
func cmdHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: kgen help [COMMAND]")
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "version":
		fmt.Fprintln(stdout, "usage: kgen version\n\nPrint kgen's version (from the module's build information) and the generated code contract.")
		return ExitOK
	case "help":
		fmt.Fprintln(stdout, "usage: kgen help [COMMAND]\n\nPrint the commands, or one command's usage and flags.")
		return ExitOK
	}
	if _, ok := commandUsage[name]; !ok {
		fmt.Fprintf(stderr, "kgen help: unknown command %q (known: %s)\n", name, strings.Join(commandNames(), ", "))
		return ExitUsage
	}
	// Every command prints its help for -h; run it so the text has one home.
	Run([]string{name, "-h"}, stdout, stdout)
	return ExitOK
}

func commandNames() []string {
	return []string{"init", "generate", "check", "diff", "graph", "produce", "consume", "topics", "version", "help"}
}

// initNext is what kgen init tells the user to run next: from where they
// are for a package of their module, from inside it for a new module.
func initNext(dir string, wrote []string) string {
	app := strings.ToLower(filepath.Base(filepath.Clean(dir)))
	if slices.Contains(wrote, "go.mod") {
		return fmt.Sprintf("\nnext (a new module):\n\tcd %s\n\tgo generate ./...\n\tgo test ./...\n\tgo run ./cmd/%s\n", dir, app)
	}
	rel := filepath.ToSlash(filepath.Clean(dir))
	if !filepath.IsAbs(dir) && !strings.HasPrefix(rel, "../") && rel != "." {
		rel = "./" + rel
	}
	return fmt.Sprintf("\nnext:\n\tgo generate %s/...\n\tgo test %s/...\n\tgo run %s/cmd/%s\n", rel, rel, rel, app)
}
