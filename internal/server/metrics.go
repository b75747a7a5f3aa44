package server

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// metrics are what /metrics exposes, in the Prometheus format.
type metrics struct {
	reg      *prometheus.Registry
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newMetrics reads the queue's depth and the reconciler's last poll (git
// nil: GitOps off) as they are scraped.
func newMetrics(k *knit.Knit, views *viewCache, q Queue, git GitOps) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "knit_runs_total",
		Help: "Runs finished, by kind and result (succeeded, failed, interrupted, awaiting-approval, refused)."}, []string{"kind", "result"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "knit_run_duration_seconds",
		Help: "How long runs took, by kind.", Buckets: prometheus.ExponentialBuckets(0.05, 2.5, 10)}, []string{"kind"})
	queueDepth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "knit_queue_depth", Help: "Runs waiting for a slot."}, func() float64 {
		queued, _ := q.Depth()
		return float64(queued)
	})
	count := func(status string) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := knit.NewRecords(k).CountComponents(ctx, status)
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
		if git == nil {
			return -1
		}
		last := git.LastPoll()
		if last.IsZero() {
			return -1
		}
		return time.Since(last).Seconds()
	})
	for _, kind := range []viewKind{summaryView, detailView} {
		for result, n := range map[string]*atomic.Int64{"hit": &views.hits[kind], "miss": &views.misses[kind]} {
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "knit_view_cache_lookups_total",
				Help:        "Environment views looked up in the view cache (a page of summaries counts once), by view and result.",
				ConstLabels: prometheus.Labels{"view": kind.String(), "result": result}}, func() float64 { return float64(n.Load()) }))
		}
	}
	m.reg.MustRegister(m.runs, m.duration, queueDepth, drifted, awaiting, pollAge,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// runFinished counts a run's outcome: refused when it never started,
// error when it ended without a result.
func (m *metrics) runFinished(o runqueue.Outcome) {
	kind := o.Job.Req.Kind
	if o.Refused != nil {
		m.runs.WithLabelValues(string(kind), string(store.StatusRefused)).Inc()
		return
	}
	result := "error"
	if o.Result != nil {
		result = string(o.Result.Status)
	}
	m.runs.WithLabelValues(string(kind), result).Inc()
	if o.Took > 0 {
		m.duration.WithLabelValues(string(kind)).Observe(o.Took.Seconds())
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
