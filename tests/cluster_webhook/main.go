// A mutating admission webhook for tests/cluster/test_cluster_webhook.py. It labels every
// object it is asked about, which proves the apiserver reaches a webhook Service in the pod network over TLS.
// Standard library only; the test builds it static and runs it from a local image.
package main

import (
	"encoding/base64"
	"encoding/json"
	"log"
	"net/http"
)

type request struct {
	UID string `json:"uid"`
}

type response struct {
	UID       string `json:"uid"`
	Allowed   bool   `json:"allowed"`
	PatchType string `json:"patchType,omitempty"`
	Patch     string `json:"patch,omitempty"`
}

type review struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Request    *request  `json:"request,omitempty"`
	Response   *response `json:"response,omitempty"`
}

const patch = `[{"op":"add","path":"/metadata/labels","value":{"logberg-webhook":"mutated"}}]`

func mutate(w http.ResponseWriter, r *http.Request) {
	var in review
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
		http.Error(w, "expected an AdmissionReview", http.StatusBadRequest)
		return
	}
	out := review{
		APIVersion: "admission.k8s.io/v1",
		Kind:       "AdmissionReview",
		Response: &response{
			UID:       in.Request.UID,
			Allowed:   true,
			PatchType: "JSONPatch",
			Patch:     base64.StdEncoding.EncodeToString([]byte(patch)),
		},
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		log.Printf("write: %v", err)
	}
	log.Printf("mutated request %s", in.Request.UID)
}

func main() {
	http.HandleFunc("/mutate", mutate)
	log.Fatal(http.ListenAndServeTLS(":8443", "/tls/tls.crt", "/tls/tls.key", nil))
}
