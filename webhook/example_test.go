package webhook_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"sync"

	"github.com/qms-dev/qms/webhook"
)

func ExampleVerify() {
	secret := "whsec_2sK8XVpv9Pn0ZxYwQmB1cT4rD7eF6gH3jL5aN8oR0uS"
	body := []byte(`{"id":"dlv_01jx0000000000000000000000","event":"queue.closed","data":{"queueRunId":"run_01jx0000000000000000000000"},"createdAt":"2026-03-01T09:00:00.000Z"}`)
	signature := webhook.Sign(secret, body) // what X-Service-Signature carries

	fmt.Println(webhook.Verify(secret, body, signature))
	fmt.Println(webhook.Verify(secret, append(body, ' '), signature))
	fmt.Println(webhook.Verify("whsec_another", body, signature))
	// Output:
	// true
	// false
	// false
}

// A receiver: verify, deduplicate by id, act, answer 2xx quickly.
func Example_receiver() {
	secret := os.Getenv("QMS_WEBHOOK_SECRET") // the whsec_... shown at creation
	var mu sync.Mutex
	seen := map[string]bool{} // use your database in production

	http.HandleFunc("/qms/webhooks", func(w http.ResponseWriter, r *http.Request) {
		e, err := webhook.Parse(r, secret)
		if errors.Is(err, webhook.ErrInvalidSignature) {
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		dup := seen[e.ID]
		seen[e.ID] = true
		mu.Unlock()
		if !dup {
			// Hand the event to a queue of your own and return: the service
			// waits 10 seconds at most. Webhooks notify; read the API for
			// the current state (GET /api/v1/turns/{turnId}, ...).
			log.Printf("%s %s %s", e.ID, e.Event, e.Data)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	// log.Fatal(http.ListenAndServe(":8000", nil))
}
