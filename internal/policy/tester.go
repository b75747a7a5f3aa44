package policy

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// Exit codes of Test, those of `opa test`.
const (
	TestsPassed = 0
	TestError   = 1 // a file that does not parse or compile, no test found
	TestsFailed = 2 // a test failed or errored
)

// Test runs the Rego unit tests (rules named test_…) of the .rego files
// under dirs, with `opa test`'s semantics: one line per test, a summary,
// and its exit codes (TestsPassed, TestError, TestsFailed). Each test is
// bounded by timeout.
func Test(ctx context.Context, out io.Writer, timeout time.Duration, dirs ...string) int {
	files, err := regoFiles(dirs, true)
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no .rego files in %s", strings.Join(dirs, ", "))
	}
	var modules map[string]*ast.Module
	if err == nil {
		modules, err = parse(files)
	}
	if err != nil {
		fmt.Fprintln(out, err)
		return TestError
	}
	c := ast.NewCompiler().WithCapabilities(capabilities()).WithEnablePrintStatements(true)
	ch, err := tester.NewRunner().SetCompiler(c).SetTimeout(timeout).CapturePrintOutput(true).
		SetDefaultRegoVersion(ast.RegoV1).Run(ctx, modules)
	if err != nil {
		fmt.Fprintln(out, strings.Join(located(err), "\n"))
		return TestError
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	// The runner runs tests in parallel: report them in file order.
	sort.SliceStable(results, func(i, j int) bool {
		a, b := results[i].Location, results[j].Location
		if a == nil || b == nil {
			return b != nil
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Row < b.Row
	})
	var pass, fail, errs int
	for _, r := range results {
		file := ""
		if r.Location != nil {
			file = fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
		}
		switch {
		case r.Error != nil:
			errs++
			fmt.Fprintf(out, "ERROR %s %s.%s: %s\n", file, r.Package, r.Name, strings.Join(located(r.Error), "; "))
		case r.Fail:
			fail++
			fmt.Fprintf(out, "FAIL  %s %s.%s\n", file, r.Package, r.Name)
		case r.Skip:
			fmt.Fprintf(out, "SKIP  %s %s.%s\n", file, r.Package, r.Name)
		default:
			pass++
			fmt.Fprintf(out, "PASS  %s %s.%s\n", file, r.Package, r.Name)
		}
		if len(r.Output) > 0 && (r.Fail || r.Error != nil) {
			fmt.Fprintf(out, "      %s\n", strings.ReplaceAll(strings.TrimSpace(string(r.Output)), "\n", "\n      "))
		}
	}
	total := pass + fail + errs
	if total == 0 {
		fmt.Fprintln(out, "no tests found (rules named test_…)")
		return TestError
	}
	fmt.Fprintf(out, "%d/%d passed", pass, total)
	if fail+errs > 0 {
		fmt.Fprintf(out, ", %d failed, %d errors\n", fail, errs)
		return TestsFailed
	}
	fmt.Fprintln(out)
	return TestsPassed
}
