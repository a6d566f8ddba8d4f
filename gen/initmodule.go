package gen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// kgenTool is the package a module names in its tool directive so that
// //go:generate go tool kgen generate runs the kgen its go.mod pins.
const kgenTool = kgenModule + "/cmd/kgen"

// enclosingModule finds the module dir would belong to: the nearest
// directory above it holding a go.mod, with that module's path. It returns
// "" when there is none.
func enclosingModule(dir string) (root, path string) {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			if m := moduleLine.FindSubmatch(data); m != nil {
				return d, string(m[1])
			}
			return "", ""
		}
		if parent := filepath.Dir(d); parent == d {
			return "", ""
		}
	}
}

var toolLine = regexp.MustCompile(`(?m)^\s*tool\s+(\(\s*)?[^)]*\b` + regexp.QuoteMeta(kgenTool) + `\b`)

// ensureKgenTool makes kgen a tool of the module at root, so the new
// project's go:generate line runs: with go get -tool at version, or at the
// module's own copy when the module is kgen. A development build cannot
// name a version to add, so then the user is told the one command to run.
func ensureKgenTool(root, modPath, version string) error {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	if toolLine.Match(data) {
		return nil
	}
	target := kgenTool
	switch {
	case modPath == kgenModule:
	case version != "" && !strings.HasPrefix(version, "(devel"):
		target += "@" + version
	default:
		return fmt.Errorf("module %s does not have kgen as a tool yet, and this kgen is a development build with no version to add: run go get -tool %s in %s, then kgen init again", modPath, kgenTool, root)
	}
	cmd := exec.Command("go", "get", "-tool", target)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go get -tool %s in %s: %w\n%s", target, root, err, out)
	}
	return nil
}

// replaceTarget is how go.mod names the kgen checkout a development build
// points a new project at: relative to the project when that is possible,
// so the two can be moved or cloned together.
func replaceTarget(project, checkout string) string {
	rel, err := filepath.Rel(project, checkout)
	if err != nil || filepath.IsAbs(rel) {
		return checkout
	}
	rel = filepath.ToSlash(rel)
	if !strings.HasPrefix(rel, "../") && rel != ".." {
		rel = "./" + rel
	}
	return rel
}

var (
	releaseVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)
	pseudoVersion  = regexp.MustCompile(`\d{14}-[0-9a-f]{12}$`)
)

// schemaURL is where editors fetch the JSON Schema of kgen.yaml for a
// project made by kgen at version: that release's copy, or the main
// branch's for a development build.
func schemaURL(version string) string {
	ref := "main"
	if releaseVersion.MatchString(version) && !pseudoVersion.MatchString(version) {
		ref = version // a release tag; pseudo-versions name no tag
	}
	return "https://raw.githubusercontent.com/kgen-dev/kgen/" + ref + "/schema/kgen.schema.json"
}
