package cli

import (
	"fmt"
	"io"

	"github.com/kgen-dev/kgen/gen"
)

// checkAgainst is kgen check -against REF: it prints every change from the
// spec at ref to the loaded one, breaking changes first in the exit status:
// 1 when a change breaks existing state or internal topics.
func checkAgainst(p *gen.Project, dir, ref string, stdout, stderr io.Writer) int {
	old, err := gen.LoadSpecAt(dir, ref)
	if err != nil {
		return report(stderr, err)
	}
	changes := gen.CompareSpecs(old, p.Spec)
	breaking := 0
	for _, c := range changes {
		if c.Breaking {
			breaking++
			fmt.Fprintln(stderr, c)
		} else {
			fmt.Fprintln(stdout, c)
		}
	}
	if breaking > 0 {
		fmt.Fprintf(stderr, "kgen: %d change(s) from %s break existing state or internal topics\n", breaking, ref)
		return ExitUser
	}
	fmt.Fprintf(stdout, "%s: no change from %s breaks existing state\n", p.Spec.File, ref)
	return ExitOK
}
