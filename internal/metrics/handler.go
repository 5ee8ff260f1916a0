package metrics

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the metrics of g (the registry New registered on) for
// GET /metrics, as promhttp.HandlerFor does: the Prometheus text format
// (text/plain; version=0.0.4) unless the client negotiates another one
// (the protobuf format), gzip-compressed when accepted. A collector that
// fails is logged to log (nil: discarded) and the other metrics are still
// served. Safe for concurrent use; a scrape gathers g once.
func Handler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      errorLog{log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// errorLog is promhttp's Logger over slog.
type errorLog struct{ log *slog.Logger }

func (l errorLog) Println(v ...any) { l.log.Warn("serving /metrics", "err", fmt.Sprint(v...)) }
