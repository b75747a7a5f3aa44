package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"knit.dev/knit/internal/server"
)

// call is one request of a test.
type call struct {
	method, path string
	token        string // the Authorization bearer secret ("" = none)
	body         any    // marshalled as JSON unless a string or []byte
	header       http.Header
	// invalid says the request breaks the document (a missing token, a
	// bad parameter or body): the document must refuse it, as the server does.
	invalid bool
}

// response is a validated response.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errorCode is the code of an error response.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	r.decode(t, &e)
	if e.Error.Message == "" {
		t.Fatalf("error without a message: %s", r.body)
	}
	return e.Error.Code
}

func (c call) request(base string) (*http.Request, []byte, error) {
	var body []byte
	switch b := c.body.(type) {
	case nil:
	case string:
		body = []byte(b)
	case []byte:
		body = b
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			return nil, nil, err
		}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(c.method, base+c.path, rd)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	return req, body, nil
}

// do sends c to the server and checks the exchange against the document:
// the request is valid unless c.invalid (then it must not be), and the
// response (status, headers, body) must be one the document describes.
// It fails the test unless the status is want.
func (h *harness) do(c call, want int) response {
	h.t.Helper()
	req, body, err := c.request(h.base)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		h.t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read body: %v", c.method, c.path, err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: got}
	h.check(c, body, r)
	if r.status != want {
		h.t.Helper()
		h.t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, r.status, want, got)
	}
	return r
}

// check validates one exchange against the document and records it.
func (h *harness) check(c call, reqBody []byte, r response) {
	h.t.Helper()
	req, _, err := c.request(h.base)
	if err != nil {
		h.t.Fatal(err)
	}
	if reqBody != nil {
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	route, params, err := h.router.FindRoute(req)
	if err != nil {
		h.t.Fatalf("%s %s: not in the OpenAPI document: %v", c.method, c.path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: bearerPresent, MultiError: true}}
	ctx := context.Background()
	switch err := openapi3filter.ValidateRequest(ctx, in); {
	case err != nil && !c.invalid:
		h.t.Errorf("%s %s: the document refuses the request: %v", c.method, c.path, err)
	case err == nil && c.invalid:
		h.t.Errorf("%s %s: the document accepts a request the test means to be invalid", c.method, c.path)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.status, Header: r.header,
		Body: io.NopCloser(bytes.NewReader(r.body)), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		h.t.Errorf("%s %s: response %d does not match the document: %v\nbody: %s", c.method, c.path, r.status, err, r.body)
	}
	covered.add(route.Method+" "+route.Path, r.status)
}

// bearerPresent is the document's bearer scheme as a client sees it: an
// Authorization: Bearer header is there (whether the token is good is the
// server's to say).
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecuritySchemeName != "bearer" {
		return fmt.Errorf("unknown security scheme %q", in.SecuritySchemeName)
	}
	if !strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
		return errors.New("no bearer token")
	}
	return nil
}

var (
	docOnce sync.Once
	docVal  *openapi3.T
	docErr  error
)

// loadDoc loads and validates the served document once per test binary.
func loadDoc(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	docOnce.Do(func() {
		loader := openapi3.NewLoader()
		docVal, docErr = loader.LoadFromData(server.OpenAPI)
		if docErr == nil {
			docErr = docVal.Validate(loader.Context)
		}
	})
	if docErr != nil {
		t.Fatalf("the OpenAPI document: %v", docErr)
	}
	router, err := gorillamux.NewRouter(docVal)
	if err != nil {
		t.Fatal(err)
	}
	return docVal, router
}
