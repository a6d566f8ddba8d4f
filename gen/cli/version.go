package cli

import (
	"runtime/debug"
	"strings"
)

const kgenModule = "github.com/kgen-dev/kgen"

// zeroPseudo is the version go.mod names a module by when a replace
// directive supplies it from a directory: it says nothing.
const zeroPseudo = "v0.0.0-00010101000000-000000000000"

// versionFrom reads kgen's version from build information: the module's
// version when kgen was built as a dependency at a version or installed
// with go install @version; else "(devel)", with the VCS revision when the
// build recorded one, and "from a local directory" for a replaced module.
func versionFrom(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "(devel)"
	}
	if bi.Main.Path == kgenModule {
		return withVCS(bi.Main.Version, bi.Settings)
	}
	for _, d := range bi.Deps {
		if d.Path != kgenModule {
			continue
		}
		if r := d.Replace; r != nil {
			if r.Version != "" && r.Version != zeroPseudo {
				return r.Version
			}
			return "(devel, from a local directory)"
		}
		if d.Version != "" && d.Version != zeroPseudo {
			return d.Version
		}
	}
	return "(devel)"
}

func withVCS(version string, settings []debug.BuildSetting) string {
	if version != "" && version != "(devel)" && version != zeroPseudo {
		return version
	}
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "(devel)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "(devel, revision " + rev
	if modified == "true" {
		v += ", modified"
	}
	return strings.TrimSpace(v) + ")"
}
