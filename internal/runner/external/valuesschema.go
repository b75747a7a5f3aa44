package external

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"knit.dev/knit/internal/spec"
)

// OpValuesCheck is the knit-kube command that checks chart values against
// their values.schema.json (package spec/valuesschema).
const OpValuesCheck = "values-check"

// valuesCheckTimeout bounds one check of every chart of an environment.
const valuesCheckTimeout = 2 * time.Minute

// ValuesSchema returns the spec.SchemaChecker that runs `path
// values-check` once per call: every chart of a validation at once. The
// process gets an empty environment; it reads nothing but its request.
func ValuesSchema(path string) spec.SchemaChecker {
	return func(checks []spec.SchemaCheck) ([][]spec.SchemaViolation, error) {
		req, err := json.Marshal(checks)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), valuesCheckTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, OpValuesCheck)
		cmd.Env = []string{}
		cmd.Stdin = bytes.NewReader(req)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &limitedBuffer{max: 4096, buf: &stderr}
		if err := cmd.Run(); err != nil {
			if msg := strings.TrimSpace(stderr.String()); msg != "" {
				return nil, fmt.Errorf("%s %s: %w: %s", path, OpValuesCheck, err, msg)
			}
			return nil, fmt.Errorf("%s %s: %w", path, OpValuesCheck, err)
		}
		var out [][]spec.SchemaViolation
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			return nil, fmt.Errorf("%s %s answered no JSON: %w", path, OpValuesCheck, err)
		}
		return out, nil
	}
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	max int
	buf *bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
