package openaichat

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// backoff is the wait before retry n (1-based): the server's Retry-After when it gave one, else 1 s doubling
// with each retry, less up to a quarter at random so that parallel workers do not retry in step; both capped at
// MaxRetryDelay.
func (m *Model) backoff(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, m.cfg.MaxRetryDelay)
	}
	d := time.Second << min(n-1, 10)
	d = min(d, m.cfg.MaxRetryDelay)
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After, in seconds or as an HTTP date; 0 when absent.
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
