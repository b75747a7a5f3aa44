package knit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// recordMapping is one store row and its read model: map fills a record
// from a row; leftOut are the row's fields the record does not carry,
// each never in the row's JSON (json:"-") and named here on purpose.
type recordMapping struct {
	row     any // a zero store value
	mapped  func(any) any
	leftOut []string
}

func mapping[S, V any](f func(S) V, leftOut ...string) recordMapping {
	var zero S
	return recordMapping{row: zero, mapped: func(s any) any { return f(s.(S)) }, leftOut: leftOut}
}

var recordMappings = []recordMapping{
	mapping(envRecord),
	mapping(runRecord),
	mapping(componentRunRecord),
	mapping(lockRecord),
	mapping(revisionRecord, "File"), // the file as written: knit diff reads it through the library
	mapping(auditRecord),
	mapping(approvalRecord),
	mapping(changeSetRecord),
	mapping(tokenRecord, "Hash"), // nobody outside the store sees a secret's hash
	mapping(ttlRecord),
	mapping(versionRecord),
	mapping(releaseRecord),
	mapping(summaryRecord),
	mapping(pipelineRecord),
	mapping(stageStateRecord),
	mapping(promotionApprovalRecord),
}

// TestRecordsMapEveryStoreField fills every field of each store row with
// a value that is not zero, maps it to its read model and checks the
// record's JSON is the row's, byte for byte: the API's JSON (and its
// OpenAPI document) is what the store's rows gave before the read models
// had types of their own. A field added to a row without its mapping, or
// a mapping that drops or renames one, fails here; a row's field that is
// never in JSON must be in the record or named in leftOut.
func TestRecordsMapEveryStoreField(t *testing.T) {
	for _, m := range recordMappings {
		typ := reflect.TypeOf(m.row)
		t.Run(typ.Name(), func(t *testing.T) {
			row := reflect.New(typ).Elem()
			fill(t, row, typ.Name())
			want, err := json.Marshal(row.Interface())
			if err != nil {
				t.Fatal(err)
			}
			rec := m.mapped(row.Interface())
			got, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the record's JSON is not the row's:\nrecord %s\nrow    %s", got, want)
			}
			carried := fieldNames(reflect.TypeOf(rec))
			for name := range fieldNames(typ) {
				if !carried[name] && !contains(m.leftOut, name) {
					t.Errorf("%s.%s is not in %T: map it, or name it in leftOut with the reason", typ, name, rec)
				}
			}
			for _, name := range m.leftOut {
				if carried[name] {
					t.Errorf("leftOut names %s, which %T carries", name, rec)
				}
			}
		})
	}
}

// TestEnvironmentOrdersAreTheStores: the list's orders are the store's,
// word for word (the library converts one to the other).
func TestEnvironmentOrdersAreTheStores(t *testing.T) {
	for v, s := range map[view.EnvironmentOrder]store.EnvironmentOrder{
		view.ByID: store.ByID, view.ByStatus: store.ByStatus, view.ByUpdated: store.ByUpdated} {
		if string(v) != string(s) {
			t.Errorf("view order %q is the store's %q", v, s)
		}
	}
}

// fill sets every field of v, however deep, to a value that is not zero
// (a slice and a map get one element; a json.RawMessage a JSON object).
func fill(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	switch {
	case v.Type() == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)))
		return
	case v.Type() == reflect.TypeOf(json.RawMessage{}):
		v.SetBytes([]byte(`{"` + name + `":1}`))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x-" + name)
	case reflect.Uint8:
		v.SetUint(uint64('a' + len(name)%26))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(7 + len(name)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, s.Index(0), name)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, name)
		fill(t, e, name)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), name)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fill(t, v.Field(i), f.Name)
			}
		}
	default:
		t.Fatalf("fill: %s is a %s: teach fill about it", name, v.Kind())
	}
}

// fieldNames are the exported fields of struct type typ, those of its
// embedded structs included (as Go promotes them).
func fieldNames(typ reflect.Type) map[string]bool {
	names := map[string]bool{}
	for _, f := range reflect.VisibleFields(typ) {
		if f.IsExported() && !f.Anonymous {
			names[f.Name] = true
		}
	}
	return names
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}
