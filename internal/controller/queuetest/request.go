package queuetest

import (
	"reflect"
	"testing"

	"knit.dev/knit/internal/knit"
)

// FullRequest is a knit.RunRequest with every serialisable field set (by
// reflection: a field added to RunRequest is set too, with no change
// here), for a test that a queue carries a request unchanged. The fields
// JSON skips (Env, Confirm, OnEvent) stay zero: a queue carries the
// environment itself, and a callback cannot cross processes.
func FullRequest(t testing.TB) knit.RunRequest {
	t.Helper()
	var req knit.RunRequest
	fill(t, reflect.ValueOf(&req).Elem(), "RunRequest")
	return req
}

// fill sets every exported field of struct v that JSON writes to a value
// that is not its zero.
func fill(t testing.TB, v reflect.Value, path string) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		set(t, v.Field(i), path+"."+f.Name)
	}
}

func set(t testing.TB, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("value of " + path)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(len(path)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		set(t, s.Index(0), path+"[0]")
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		set(t, k, path+" key")
		set(t, e, path+" value")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		set(t, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		fill(t, v, path)
	default:
		t.Fatalf("queuetest.FullRequest: cannot set %s (a %s): teach it this kind", path, v.Kind())
	}
}
