// logberg test harness: compiled into MinIO's cmd package with `go build -overlay`
// (see eks/eks.mk, target eks-minio). Not part of logberg itself.
//
// Amazon S3 answers a GET or HEAD of a missing key with 404 NoSuchKey only when the
// caller may s3:ListBucket the bucket; otherwise with 403 AccessDenied, even if
// s3:GetObject on the key is allowed. MinIO applies that rule only to anonymous
// requests. This middleware applies it to signed ones too, asking MinIO's own IAM
// evaluation (the caller's policies, session policy and conditions) whether the
// caller may list the bucket in the context of this very request (no s3:prefix),
// as AWS does.

package cmd

import (
	"bytes"
	"net/http"

	"github.com/minio/pkg/v3/policy"
)

func init() {
	globalMiddlewares = append(globalMiddlewares, logbergMissingKeyAsAWS)
}

// logbergBufferedWriter holds back a 404 response until the middleware has decided
// whether AWS would have sent it.
type logbergBufferedWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *logbergBufferedWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if code != http.StatusNotFound {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *logbergBufferedWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.status == http.StatusNotFound {
		return w.body.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

func (w *logbergBufferedWriter) Flush() {
	if w.status != http.StatusNotFound {
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}

func logbergMissingKeyAsAWS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bucket, object := path2BucketObject(r.URL.Path)
		signed := getRequestAuthType(r) != authTypeAnonymous
		if (r.Method != http.MethodGet && r.Method != http.MethodHead) || bucket == "" ||
			object == "" || !signed {
			next.ServeHTTP(w, r)
			return
		}
		bw := &logbergBufferedWriter{ResponseWriter: w}
		next.ServeHTTP(bw, r)
		if bw.status != http.StatusNotFound {
			return
		}
		missingKey := w.Header().Get(xMinIOErrCodeHeader) == "NoSuchKey" ||
			bytes.Contains(bw.body.Bytes(), []byte("<Code>NoSuchKey</Code>"))
		if missingKey && !logbergMayListBucket(r, bucket) {
			denied := errorCodes.ToAPIErr(ErrAccessDenied)
			w.Header().Del("Content-Length")
			if r.Method == http.MethodHead {
				writeErrorResponseHeadersOnly(w, denied)
			} else {
				writeErrorResponse(r.Context(), w, denied, r.URL)
			}
			return
		}
		w.WriteHeader(bw.status)
		_, _ = w.Write(bw.body.Bytes())
	})
}

// logbergMayListBucket: may the signer of r list bucket, judged on r's own context?
func logbergMayListBucket(r *http.Request, bucket string) bool {
	cred, owner, errCode := getReqAccessKeyV4(r, globalSite.Region(), serviceS3)
	if errCode != ErrNone {
		return false
	}
	return globalIAMSys.IsAllowed(policy.Args{
		AccountName:     cred.AccessKey,
		Groups:          cred.Groups,
		Action:          policy.ListBucketAction,
		BucketName:      bucket,
		ConditionValues: getConditionValues(r, "", cred),
		IsOwner:         owner,
		Claims:          cred.Claims,
	})
}
