package spec

import (
	"strings"
	"testing"
)

// TestATemplatesProblemsOfTheTeamAreReportedOnceAtItsFile (issue 37 item
// 10): a wrong parameter type, given directly or through extends, and a
// cycle an override makes are reported once, at the team's file, never
// also inside the template (a file the team does not own).
func TestATemplatesProblemsOfTheTeamAreReportedOnceAtItsFile(t *testing.T) {
	cycle := "  overrides:\n    components:\n      - name: app\n        dependsOn: [net]\n      - name: net\n        dependsOn: [app]\n"
	dir := repo(t, map[string]string{
		"templates/web-stack.yaml": webStack,
		"modules/app/main.tf":      modApp,
		"envs/type.yaml":           devEnv("{tier: dev, size: three}", ""),
		"envs/cycle.yaml":          devEnv("{tier: dev}", cycle),
		"envs/staging.yaml":        devEnv("{tier: dev}", ""),
		"envs/prodtype.yaml":       "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  envName: prod\n  extends: {path: ./staging.yaml}\n  parameters: {size: three}\n",
		"envs/prodcycle.yaml":      "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  envName: prod\n  extends: {path: ./staging.yaml}\n" + cycle,
	})
	for file, want := range map[string]string{
		"envs/type.yaml":      `envs/type.yaml:8:27: spec.parameters.size: parameter "size" is a number`,
		"envs/cycle.yaml":     "envs/cycle.yaml:12:9: spec.components[0].dependsOn: cycle: app → net → app",
		"envs/prodtype.yaml":  `envs/prodtype.yaml:6:16: spec.parameters.size: parameter "size" is a number`,
		"envs/prodcycle.yaml": "envs/prodcycle.yaml:9:9: spec.components[0].dependsOn: cycle: app → net → app",
	} {
		_, ds := loadIn(t, dir, file)
		if errs := ds.Errors(); len(errs) != 1 || !strings.HasPrefix(ds.String(), want) || strings.Contains(ds.String(), "templates/") {
			t.Errorf("%s: want one error, %s…, none in the template:\n%s", file, want, ds)
		}
	}
}
