package bench

import (
	"context"
	"sync"
)

// parallel calls work for each of the indexes on the given number of workers, and returns when all handed-out work
// is done. Once ctx is done no more indexes are handed out; work already running finishes (it sees ctx itself).
func parallel(ctx context.Context, workers int, indexes []int, work func(i int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for i := range jobs {
				work(i)
			}
		})
	}
feed:
	for _, i := range indexes {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
}

// indexes is 0, 1, ..., n-1.
func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
