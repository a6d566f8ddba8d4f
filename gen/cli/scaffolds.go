package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/kgen-dev/kgen/gen"
)

// missingScaffolds lists the scaffold files (processors, main) that
// generate would write because they do not exist.
func missingScaffolds(res *gen.Result) []string {
	var out []string
	for _, f := range res.Files {
		if !f.Scaffold {
			continue
		}
		if _, err := os.Stat(filepath.Join(res.Dir, filepath.FromSlash(f.Path))); errors.Is(err, os.ErrNotExist) {
			out = append(out, f.Path)
		}
	}
	sort.Strings(out)
	return out
}

// scaffoldMark is the doc comment kgen's processor scaffold starts its type
// with (templates/processor.go.tmpl): how a file is known to be one.
var scaffoldMark = regexp.MustCompile(`(?m)^// \w+ is the code of processor "([^"]+)"\. kgen wrote this file once`)

// orphan is a scaffolded processor file whose processor left the spec.
type orphan struct {
	File      string // relative to the spec's directory
	Processor string
}

// orphanedScaffolds finds processor scaffolds in the spec's directory whose
// processor is no longer in the spec, as gqlgen reports resolvers left over:
// the code compiles on, unused, until someone deletes it.
func orphanedScaffolds(p *gen.Project) ([]orphan, error) {
	names := map[string]bool{}
	for _, n := range p.Graph.Processors {
		names[n.Name.Value] = true
	}
	entries, err := os.ReadDir(p.Dir)
	if err != nil {
		return nil, err
	}
	var out []orphan
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".gen.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(p.Dir, name))
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(data, []byte("is the code of processor")) {
			continue
		}
		for _, m := range scaffoldMark.FindAllSubmatch(data, -1) {
			if proc := string(m[1]); !names[proc] {
				out = append(out, orphan{File: name, Processor: proc})
			}
		}
	}
	return out, nil
}

// printOrphans notes the orphaned scaffolds of p on w.
func printOrphans(p *gen.Project, w io.Writer) {
	orphans, err := orphanedScaffolds(p)
	if err != nil {
		fmt.Fprintf(w, "note: looking for processor files left over: %v\n", err)
		return
	}
	for _, o := range orphans {
		fmt.Fprintf(w, "note: %s: processor %q is no longer in %s: delete the file if its code is not needed\n", o.File, o.Processor, "kgen.yaml")
	}
}
