// Package providers_test holds checks over the provider packages as a whole.
package providers_test

import (
	"os/exec"
	"strings"
	"testing"
)

// sdkModules are the provider SDKs (and what only they bring in): they
// belong in the providers/ leaf packages and the commands, never in the
// library or the transports, so importing postgram stays light.
var sdkModules = []string{
	"github.com/openai/openai-go/",
	"github.com/anthropics/anthropic-sdk-go/",
	"github.com/ollama/ollama/",
}

// deps lists the packages the given patterns link (go list -deps).
func deps(t *testing.T, patterns ...string) []string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, patterns...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 10 {
		t.Fatalf("go list %v returned only %d packages", patterns, len(pkgs))
	}
	return pkgs
}

func sdkIn(pkgs []string) []string {
	var found []string
	for _, p := range pkgs {
		for _, m := range sdkModules {
			if strings.HasPrefix(p+"/", m) {
				found = append(found, p)
			}
		}
	}
	return found
}

// TestLibraryLinksNoProviderSDK proves the root package and the transports
// link no provider SDK.
func TestLibraryLinksNoProviderSDK(t *testing.T) {
	t.Parallel()
	for _, pattern := range []string{"github.com/postgram-go/postgram", "github.com/postgram-go/postgram/transport/..."} {
		if found := sdkIn(deps(t, pattern)); len(found) > 0 {
			t.Errorf("%s links provider SDK packages: %v", pattern, found)
		}
	}
}

// TestProvidersUseTheirSDK guards the check above against passing
// vacuously: each provider package does link its SDK.
func TestProvidersUseTheirSDK(t *testing.T) {
	t.Parallel()
	for pkg, sdk := range map[string]string{
		"github.com/postgram-go/postgram/providers/openai":    "github.com/openai/openai-go/v3",
		"github.com/postgram-go/postgram/providers/anthropic": "github.com/anthropics/anthropic-sdk-go/v2",
		"github.com/postgram-go/postgram/providers/ollama":    "github.com/ollama/ollama/api",
	} {
		found := false
		for _, p := range deps(t, pkg) {
			found = found || p == sdk
		}
		if !found {
			t.Errorf("%s does not link %s", pkg, sdk)
		}
	}
}
