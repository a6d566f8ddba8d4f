package queryapi_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/kgen-dev/kgen/runtime/queryapi"
)

// A generated application's QueryClient wraps these: NewQueryClient(url,
// opts).Counts() is KeyValueStore[string, int64](client, "counts").
func ExampleKeyValueClient_Get() {
	client := queryapi.NewClient("https://wordcount-0.example:9090", queryapi.ClientOptions{Token: "the ops token"})
	counts := queryapi.KeyValueStore[string, int64](client, "counts")
	ctx := context.Background()
	for {
		n, served, err := counts.Get(ctx, "the")
		var qe *queryapi.Error
		switch {
		case errors.Is(err, queryapi.ErrNotFound):
			fmt.Println("never seen")
		case errors.As(err, &qe) && qe.Retry:
			time.Sleep(qe.RetryAfter) // restoring or moving: ask again
			continue
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Printf("%d, from instance %s (stale %v)\n", n, served.Instance.ID, served.Stale)
		}
		return
	}
}
