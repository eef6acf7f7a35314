package s3

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/url"
	"strconv"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func queryEscape(s string) string { return url.QueryEscape(s) }

func v2sign(secret, sts string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(sts))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}
