package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZSlow(t *testing.T) {
	files, _ := filepath.Glob(os.Getenv("CORPUS") + "/*")
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		lines := strings.SplitN(string(raw), "\n", 2)
		v := strings.TrimSpace(lines[1])
		v = strings.TrimSuffix(strings.TrimPrefix(v, "[]byte("), ")")
		s, err := strconv.Unquote(v)
		if err != nil { continue }
		start := time.Now()
		Parse("fuzz.yaml", "/tmp", []byte(s))
		if d := time.Since(start); d > 20*time.Millisecond {
			fmt.Printf("%v %s len=%d %q\n", d, filepath.Base(f), len(s), s[:min(200, len(s))])
		}
	}
}
