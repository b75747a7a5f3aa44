package cli

import (
	"fmt"
	"io"

	"knit.dev/knit/internal/spec"
)

// loadEnv loads and validates file. Errors come back as one error carrying
// every diagnostic; warnings go to stderr and do not stop the command.
func loadEnv(file string, stderr io.Writer) (*spec.Environment, error) {
	if file == "" {
		return nil, fmt.Errorf("no environment file: pass -f FILE")
	}
	env, diags := spec.Load(file)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	for _, w := range diags.Warnings() {
		fmt.Fprintln(stderr, w.String())
	}
	return env, nil
}
