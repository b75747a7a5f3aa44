// Package valuesschema applies Helm charts' values.schema.json to their
// values with the JSON-schema library Helm itself uses, so that knit
// validate refuses exactly what helm install would.
//
// It runs in knit-kube (`knit-kube values-check`), never in knit: the
// library compiles every JSON-schema draft's metaschema at init, about
// 7 ms that every knit command would pay. knit asks it once per
// validation, for every chart at once (spec.Options.ValuesSchema).
package valuesschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"knit.dev/knit/internal/spec"
)

// maxRequest bounds what Serve reads: the charts' values and schemas,
// each at most 4 MiB as spec reads them.
const maxRequest = 256 << 20

var printer = message.NewPrinter(language.English)

// Serve reads the checks as one JSON array from r and writes their
// violations, as one JSON array in the same order, to w.
func Serve(r io.Reader, w io.Writer) error {
	var checks []spec.SchemaCheck
	dec := json.NewDecoder(io.LimitReader(r, maxRequest))
	if err := dec.Decode(&checks); err != nil {
		return fmt.Errorf("read the checks: %w", err)
	}
	out := make([][]spec.SchemaViolation, len(checks))
	for i, c := range checks {
		out[i] = Check(c)
	}
	return json.NewEncoder(w).Encode(out)
}

// Check applies c's schema to c's values, leaving out what is said of the
// values under c's unknown paths. A schema that does not compile alone
// (it refers to another document) refuses nothing: nothing is fetched and
// no file read.
func Check(c spec.SchemaCheck) []spec.SchemaViolation {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.Schema))
	if err != nil {
		return []spec.SchemaViolation{{Message: "values.schema.json is not JSON: " + err.Error()}}
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(jsonschema.SchemeURLLoader{}) // nothing fetched, no file read
	if err := comp.AddResource("file:///values.schema.json", doc); err != nil {
		return nil
	}
	sch, err := comp.Compile("file:///values.schema.json")
	if err != nil {
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.Values))
	if err != nil {
		return nil
	}
	verr, ok := sch.Validate(inst).(*jsonschema.ValidationError)
	if !ok {
		return nil
	}
	out := []spec.SchemaViolation{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, cause := range e.Causes {
				walk(cause)
			}
			return
		}
		for _, u := range c.Unknown {
			if hasPrefix(e.InstanceLocation, u) {
				return
			}
		}
		out = append(out, spec.SchemaViolation{At: e.InstanceLocation,
			Message: fmt.Sprintf("at '/%s': %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(printer))})
	}
	walk(verr)
	sort.SliceStable(out, func(i, j int) bool { return strings.Join(out[i].At, ".") < strings.Join(out[j].At, ".") })
	return out
}

func hasPrefix(loc, prefix []string) bool {
	if len(loc) < len(prefix) {
		return false
	}
	for i := range prefix {
		if loc[i] != prefix[i] {
			return false
		}
	}
	return true
}
