package health

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"syscall"
)

// Bounds on what a check reads from a server it does not control.
const (
	// MaxBody is how much of a response body a check reads: a body
	// regex sees this much, a Prometheus answer may be this long.
	MaxBody = 1 << 20
	// MaxRedirects is how many redirects an HTTP check follows.
	MaxRedirects = 3
)

// HTTP is an HTTP(S) check: healthy when URL answers ExpectStatus and,
// when set, the body's first MaxBody bytes match BodyRegex. TLS
// certificates are verified unless InsecureSkipVerify is set.
type HTTP struct {
	URL                string
	ExpectStatus       int
	BodyRegex          *regexp.Regexp
	InsecureSkipVerify bool
	// Sensitive says the URL is a secret (a sensitive output): an error
	// is then told by its kind alone, as its text may name the host.
	Sensitive bool
}

// Measure requests the URL once.
func (h *HTTP) Measure(ctx context.Context) Measurement {
	body, status, err := get(ctx, h.URL, h.InsecureSkipVerify)
	if err != nil {
		msg := err.Error()
		if h.Sensitive {
			msg = errorKind(err)
		}
		return Measurement{Phase: PhaseError, Message: msg}
	}
	m := Measurement{StatusCode: status}
	switch {
	case status != h.ExpectStatus:
		m.Phase, m.Message = PhaseFailed, fmt.Sprintf("status %d, want %d", status, h.ExpectStatus)
	case h.BodyRegex != nil && !h.BodyRegex.Match(body):
		m.Phase, m.Message = PhaseFailed, fmt.Sprintf("status %d; body does not match %s", status, strconv.Quote(h.BodyRegex.String()))
	default:
		m.Phase, m.Message = PhaseSuccessful, fmt.Sprintf("status %d", status)
	}
	return m
}

// get requests u and reads at most MaxBody bytes of the answer. Its
// errors never name u, which may hold credentials (user:password@, a
// token in the query).
func get(ctx context.Context, u string, insecure bool) (body []byte, status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, errors.New("not a valid URL")
	}
	client := &http.Client{
		Transport: &http.Transport{
			Proxy:             http.ProxyFromEnvironment,
			DisableKeepAlives: true,
			// #nosec G402 -- off only when the check says insecureSkipVerify.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12},
		},
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return errTooManyRedirects
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, plain(ctx, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	if err != nil {
		return nil, resp.StatusCode, plain(ctx, err)
	}
	return body, resp.StatusCode, nil
}

// errorKind names what kind of error err is, without its text.
func errorKind(err error) string {
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var op *net.OpError
	switch {
	case err.Error() == "timed out":
		return "timed out"
	case errors.Is(err, errTooManyRedirects):
		return errTooManyRedirects.Error()
	case errors.As(err, &dns):
		return "the host name did not resolve"
	case errors.As(err, &cert):
		return "the TLS certificate was not accepted"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &op):
		return "the connection failed (" + op.Op + ")"
	}
	return "the request failed"
}

var errTooManyRedirects = fmt.Errorf("more than %d redirects", MaxRedirects)

// plain is err without the URL a *url.Error carries.
func plain(ctx context.Context, err error) error {
	if ctx.Err() == context.DeadlineExceeded {
		return errors.New("timed out")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, errTooManyRedirects) {
		return errTooManyRedirects
	}
	return err
}
