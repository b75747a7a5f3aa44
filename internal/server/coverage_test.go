package server_test

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"knit.dev/knit/internal/server"
)

// coverage records which documented operation answered which statuses, so
// TestMain can fail when one the document promises was never seen.
type coverage struct {
	mu   sync.Mutex
	seen map[string]map[int]bool
}

var covered = &coverage{seen: map[string]map[int]bool{}}

func (c *coverage) add(op string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[op] == nil {
		c.seen[op] = map[int]bool{}
	}
	c.seen[op][status] = true
}

// notExercised are documented responses no test provokes, and why.
var notExercised = map[string]string{
	"500": "an internal failure of the store or the library",
}

// missing lists documented responses no test saw.
func (c *coverage) missing(doc *openapi3.T) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			for code := range op.Responses.Map() {
				n, err := strconv.Atoi(code)
				if err != nil || c.seen[key][n] || notExercised[code] != "" || notExercised[key+" "+code] != "" {
					continue
				}
				out = append(out, key+" "+code)
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestMain fails the package when a full run of its tests never saw a
// response the document describes: every endpoint is exercised with its
// success and each error status it can return.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !testing.Short() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(server.OpenAPI)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load the OpenAPI document:", err)
			os.Exit(1)
		}
		if miss := covered.missing(doc); len(miss) > 0 {
			fmt.Fprintf(os.Stderr, "documented responses no test exercised:\n  %s\n", strings.Join(miss, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}
