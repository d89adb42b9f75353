"""OAuth's pieces without a server (issue 24): PKCE as RFC 7636 defines it, the loopback redirect rule, the
providers' settings (defaults, the config file's [oauth.<provider>], the environment)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from ygg_server.settings import oauth_section
from ygg_server.startup import StartupError
from ygg_server.tools import oauth


def test_pkce_is_rfc_7636s_s256():
    """RFC 7636 Appendix B's example, and a fresh pair within §4.1's 43 to 128 unreserved characters."""
    assert oauth.challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    verifier, challenge = oauth.pkce_pair()
    assert 43 <= len(verifier) <= 128 and set(verifier) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    assert challenge == oauth.challenge_of(verifier) and oauth.pkce_pair()[0] != verifier


@pytest.mark.parametrize("uri, ok", [("http://127.0.0.1:8123/callback", True), ("http://[::1]:9/cb", True),
                                     ("http://localhost:5000/", True), ("https://127.0.0.1:8123/cb", False),
                                     ("http://127.0.0.1/cb", False), ("http://10.0.0.1:80/cb", False),
                                     ("http://evil.test:80/cb", False), ("http://127.0.0.1:8/cb?x=1", False),
                                     (42, False)])
def test_a_redirect_is_a_loopback_one(uri, ok):
    """RFC 8252 §7.3: a native app's redirect is http on a loopback address, with the port it listens on."""
    assert (oauth.loopback_problem(uri) is None) == ok


def test_the_authorize_url_carries_the_challenge_and_never_the_verifier():
    p = oauth.providers(env={}, file={"google": {"client_id": "cid"}})["google"]
    verifier, challenge = oauth.pkce_pair()
    url = oauth.authorize_url(p, "st", challenge, "http://127.0.0.1:5/cb")
    q = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert url.startswith("https://accounts.google.com/o/oauth2/v2/auth?")
    assert q == {"response_type": "code", "client_id": "cid", "redirect_uri": "http://127.0.0.1:5/cb",
                 "scope": p.scope, "state": "st", "code_challenge": challenge, "code_challenge_method": "S256",
                 "access_type": "offline", "prompt": "consent"}
    assert verifier not in url


def test_providers_come_from_defaults_then_the_file_then_the_environment():
    got = oauth.providers(env={"YGG_OAUTH_GITHUB_CLIENT_ID": "from-env", "YGG_OAUTH_GITHUB_API_URL": "http://gh.test"},
                          file={"github": {"client_id": "from-file", "client_secret": "s"}})
    gh = got["github"]
    assert (gh.client_id, gh.client_secret, gh.api_url) == ("from-env", "s", "http://gh.test")
    assert gh.token_url == "https://github.com/login/oauth/access_token"
    assert oauth.OAuthClient(providers=got).offered() == [{"provider": "github", "label": "GitHub", "scope": "repo"}]
    assert oauth.OAuthClient(providers=oauth.providers(env={})).offered() == []  # no client: nothing offered


def test_the_config_files_oauth_section_is_checked():
    assert oauth_section({"oauth": {"github": {"client_id": "x"}}}, "f.toml") == {"github": {"client_id": "x"}}
    for bad in ({"gitlab": {}}, {"github": {"client_id": 3}}, {"google": {"secret": "x"}}):
        with pytest.raises(StartupError):
            oauth_section({"oauth": bad}, "f.toml")
