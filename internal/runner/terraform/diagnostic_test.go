package terraform

import "testing"

func TestStderrCauseIsTheFirstErrorDiagnostic(t *testing.T) {
	boxed := `
There are some problems with the CLI configuration:
╷
│ Warning: Unable to open CLI configuration file
│
│ The CLI configuration file at "/root/.terraformrc" does not exist.
╵
╷
│ Error: No value for required variable
│
│   on main.tf line 1:
│    1: variable "storage_gb" {
│
│ The root module input variable "storage_gb" is not set, and has no default
│ value. Use a -var or -var-file command line argument to provide a value for
│ this variable.
╵
╷
│ Error: Second problem
╵
`
	plain := "Error: Failed to query available provider packages\n\nCould not retrieve the list of available versions for provider hashicorp/aws: no available releases match.\n"
	for _, tc := range []struct{ name, text, want string }{
		{"boxed", boxed, `No value for required variable: The root module input variable "storage_gb" is not set, and has no default value. (main.tf line 1)`},
		{"plain", plain, "Failed to query available provider packages: Could not retrieve the list of available versions for provider hashicorp/aws: no available releases match."},
		{"no error", "Warning: x\n\ndetail\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stderrCause(tc.text); got != tc.want {
				t.Errorf("stderrCause =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
