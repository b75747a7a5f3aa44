package server

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// metrics are what /metrics exposes, in the Prometheus format.
type metrics struct {
	reg        *prometheus.Registry
	runs       *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	queueDepth prometheus.Gauge
	lastPoll   atomic.Int64 // unix nanoseconds of the last successful git poll
}

func newMetrics(k *knit.Knit, views *viewCache) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "knit_runs_total",
		Help: "Runs finished, by kind and result (succeeded, failed, interrupted, awaiting-approval, refused)."}, []string{"kind", "result"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "knit_run_duration_seconds",
		Help: "How long runs took, by kind.", Buckets: prometheus.ExponentialBuckets(0.05, 2.5, 10)}, []string{"kind"})
	m.queueDepth = prometheus.NewGauge(prometheus.GaugeOpts{Name: "knit_queue_depth", Help: "Runs waiting for a slot."})
	count := func(status string) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := k.CountComponents(ctx, status)
			if err != nil {
				return -1
			}
			return float64(n)
		}
	}
	drifted := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "knit_drifted_components",
		Help: "Components whose last drift check found them drifted."}, count(string(engine.Drifted)))
	awaiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "knit_awaiting_approval_components",
		Help: "Components waiting for a person to approve their plan."}, count(string(engine.Awaiting)))
	pollAge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "knit_git_poll_age_seconds",
		Help: "Seconds since the last successful git poll (-1: GitOps off or never polled)."}, func() float64 {
		last := m.lastPoll.Load()
		if last == 0 {
			return -1
		}
		return time.Since(time.Unix(0, last)).Seconds()
	})
	for _, kind := range []viewKind{summaryView, detailView} {
		for result, n := range map[string]*atomic.Int64{"hit": &views.hits[kind], "miss": &views.misses[kind]} {
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "knit_view_cache_lookups_total",
				Help:        "Environment views looked up in the view cache (a page of summaries counts once), by view and result.",
				ConstLabels: prometheus.Labels{"view": kind.String(), "result": result}}, func() float64 { return float64(n.Load()) }))
		}
	}
	m.reg.MustRegister(m.runs, m.duration, m.queueDepth, drifted, awaiting, pollAge,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) runFinished(kind store.RunKind, result string, took time.Duration) {
	m.runs.WithLabelValues(string(kind), result).Inc()
	if took > 0 {
		m.duration.WithLabelValues(string(kind)).Observe(took.Seconds())
	}
}

func (m *metrics) polled() { m.lastPoll.Store(time.Now().UnixNano()) }

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
