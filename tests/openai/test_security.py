"""What a web page could make the user's browser send to `sextant serve`, refused.

Run by scripts/e2e.sh against the running server (SEXTANT_URL, SEXTANT_TOKEN). Each test
replays one hole found in the server as it was (issue 13): a cross-site POST without a
preflight, a DNS-rebound Host, a foreign Origin, and request fields naming files.
"""

import os
import tempfile
import unittest
from urllib.parse import urlparse

import httpx

URL = os.environ["SEXTANT_URL"].rstrip("/")
TOKEN = os.environ["SEXTANT_TOKEN"]
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {**AUTH, "Content-Type": "application/json"}
PORT = urlparse(URL).port
SECRET = "zebracorn4471"


def search_hits(word):
    r = httpx.post(URL + "/api/search", json={"query": word, "k": 5}, headers=AUTH)
    r.raise_for_status()
    return [h for h in r.json()["hits"] if word in h["text"]]


class Security(unittest.TestCase):
    def test_a_cross_site_text_plain_post_cannot_ingest_a_folder(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "secret.md"), "w") as f:
                f.write(f"# Payroll\n\nThe vault code is {SECRET}.\n")
            body = '{"path": "%s"}' % d
            # A form or fetch with text/plain needs no CORS preflight: the browser sends it.
            for ct in ["text/plain", "application/x-www-form-urlencoded", None]:
                h = dict(AUTH)
                if ct:
                    h["Content-Type"] = ct
                r = httpx.post(URL + "/api/ingest", content=body, headers=h)
                self.assertEqual(r.status_code, 415, r.text)
                self.assertEqual(r.json()["error"]["code"], "unsupported_media_type")
            self.assertEqual(search_hits(SECRET), [])

    def test_a_cross_site_post_cannot_drive_the_model(self):
        r = httpx.post(
            URL + "/v1/chat/completions",
            content='{"messages": [{"role": "user", "content": "hi"}]}',
            headers={**AUTH, "Content-Type": "text/plain"},
        )
        self.assertEqual(r.status_code, 415, r.text)

    def test_a_rebound_host_is_refused(self):
        for host in [f"evil.example:{PORT}", "evil.example", f"127.0.0.1:{PORT + 1}"]:
            r = httpx.get(URL + "/api/kb", headers={**AUTH, "Host": host})
            self.assertEqual(r.status_code, 421, host)
            self.assertNotIn("documents", r.text)
        r = httpx.get(URL + "/api/kb", headers={**AUTH, "Host": f"localhost:{PORT}"})
        self.assertEqual(r.status_code, 200)

    def test_a_foreign_origin_is_refused_and_the_own_origin_works(self):
        for origin in ["http://evil.example", "null", f"http://evil.example:{PORT}"]:
            r = httpx.get(URL + "/api/kb", headers={**AUTH, "Origin": origin})
            self.assertEqual(r.status_code, 403, origin)
            r = httpx.post(URL + "/api/search", json={"query": "x"}, headers={**AUTH, "Origin": origin})
            self.assertEqual(r.status_code, 403, origin)
        r = httpx.post(URL + "/api/search", json={"query": "rollback"}, headers={**AUTH, "Origin": URL})
        self.assertEqual(r.status_code, 200, r.text)

    def test_request_fields_never_name_files(self):
        forensics = {
            "step_completed": "build-step-3", "agent": "x", "status": "VERIFIED",
            "forensics": {"tests": {"passed": 1, "failed": 0}, "lint": {"errors": 0}, "concerns": []},
            "iteration": {"current": 1, "max": 3},
        }
        for flow in ["/etc/passwd", "../../../../etc/passwd", "build/../../x"]:
            r = httpx.post(URL + "/api/route", json={"forensics": forensics, "flow": flow}, headers=JSON)
            self.assertEqual(r.status_code, 400, r.text)
            self.assertNotIn("root:", r.text)
        r = httpx.get(URL + "/api/route/log", params={"flow": "../../../etc"}, headers=AUTH)
        self.assertEqual(r.status_code, 400)
        r = httpx.post(URL + "/api/interview", json={"session": "../../../../etc/passwd"}, headers=JSON)
        self.assertEqual(r.status_code, 400)
        self.assertNotIn("root:", r.text)
        r = httpx.get(URL + "/api/document", params={"path": "/etc/passwd"}, headers=AUTH)
        self.assertEqual(r.status_code, 404)
        self.assertNotIn("root:", r.text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
