"""Sends every validation image to an online service as ModelArts clients do
(POST <access_address>, multipart field "images", X-Auth-Token) and prints
the accuracy of the answers.

    predict.py --url http://127.0.0.1:8080/v1/infers/<service_id> --token TOKEN --data DIR/val [--threads 4]
"""
import argparse
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse
import uuid


def multipart(field, filename, content):
    boundary = uuid.uuid4().hex
    head = ('--%s\r\nContent-Disposition: form-data; name="%s"; filename="%s"\r\n'
            'Content-Type: image/png\r\n\r\n' % (boundary, field, filename)).encode()
    return head + content + ("\r\n--%s--\r\n" % boundary).encode(), "multipart/form-data; boundary=" + boundary


def worker(url, token, items, results, errors):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    for label, path in items:
        with open(path, "rb") as f:
            body, ctype = multipart("images", os.path.basename(path), f.read())
        try:
            conn.request("POST", u.path, body=body, headers={"Content-Type": ctype, "X-Auth-Token": token})
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            errors.append("%s: %s" % (path, e))
            conn.close()
            conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
            continue
        if resp.status != 200:
            errors.append("%s: HTTP %d %s" % (path, resp.status, data[:200].decode(errors="replace")))
            continue
        pred = json.loads(data)["predictions"][0]["digit"]
        results.append(pred == label)
    conn.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--data", required=True, help="the val dir: <digit>/<image>.png")
    p.add_argument("--threads", type=int, default=4)
    a = p.parse_args()
    items = []
    for d in sorted(os.listdir(a.data)):
        for f in sorted(os.listdir(os.path.join(a.data, d))):
            items.append((int(d), os.path.join(a.data, d, f)))
    results, errors = [], []
    start = time.time()
    threads = [threading.Thread(target=worker, args=(a.url, a.token, items[i::a.threads], results, errors)) for i in range(a.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors[:5]:
        print("error:", e, file=sys.stderr)
    if errors or not results:
        sys.exit("%d of %d requests failed" % (len(errors), len(items)))
    acc = sum(results) / len(results)
    print("sent %d images in %.1fs: accuracy %.3f" % (len(items), time.time() - start, acc))
    print("accuracy=%.3f" % acc)


if __name__ == "__main__":
    main()
