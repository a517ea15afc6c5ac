"""Masking personal data and secrets in production queries before anything stores or shows them.

:func:`mask_personal_data` runs on every query a log holds
(:func:`coverage_core.checks.traffic.read_traffic` applies it as it reads),
so the JSON report, JUnit, the terminal and the dashboard only ever see the
masked text. The text is first normalised: NFKC (full-width ``＠`` and
digits become ``@`` and ASCII digits) and invisible format characters
(zero-width space, soft hyphen, bidi overrides) removed, so those tricks
cannot split an address or a number out of a rule's reach.

**Masked** (placeholder in brackets, which
:func:`~coverage_core.checks.traffic_answers.strip_masks` removes before
topics are named or queries embedded):

* ``[email]``: e-mail addresses, with or without a dot in the domain
  (``root@localhost``), quoted local parts (``"john doe"@x.com``), spaces
  around ``@``, and the spelled-out forms ``john [at] example [dot] com``,
  ``john(at)example(dot)org`` and ``john at example dot com`` (the last
  only when it ends in a common top-level domain, so "look at this dot
  product" stays);
* ``[secret]``: credentials in URLs (``https://user:pass@host``); the
  token formats of Yelp's ``detect-secrets`` (AWS ``AKIA…``, GitHub
  ``ghp_…``, GitLab, Slack ``xox…``, JWTs, OpenAI, Stripe, SendGrid, Twilio,
  PyPI, Discord, Telegram, Mailchimp, Square, Azure storage keys); API keys
  shaped ``sk-…``/``pk_…``/``rk_…``; PEM private keys; the value after
  ``password``/``api_key``/``token``/``secret``/``Bearer``; hex runs of 32+
  characters; and any 20+ character token mixing letters and digits whose
  character classes switch often and whose entropy is high (a random key, not
  a product code or a hyphenated phrase);
* ``[id]``: UUIDs and US social security numbers (``123-45-6789``);
* ``[iban]``: IBANs whose checksum holds (``python-stdnum``);
* ``[card]``: card numbers (13-19 digits, unbroken or in groups split by
  spaces, dashes, dots or slashes) whose Luhn checksum holds; such groups
  failing it become ``[number]``;
* ``[ip]``: IPv4 and full IPv6 addresses;
* ``[phone]``: numbers Google's ``phonenumbers`` finds valid in
  :data:`PHONE_REGIONS` or in international form (``+…``), and any run of 9+
  digits with separators (year ranges such as "1914-1918 1939-1945" stay);
* ``[number]``: any other run of 7+ digits (accounts, customer numbers);
* ``[address]``: street addresses written as a house number and a street
  word ("221B Baker Street", "1600 Pennsylvania Ave", "12 rue de la Paix",
  "Hauptstraße 5");
* ``[name]``: a capitalised name after a title (Mr, Mrs, Ms, Dr, Prof…) or
  after "my name is" / "name:".

**Not masked**: names anywhere else (no named-entity model is bundled and
none may be downloaded), street names without a house number, towns and
postcodes alone, dates of birth, national ID formats other than the US SSN,
secrets shorter than 20 characters that follow no known format and no
keyword, and e-mail addresses spelled with a plain " at " and a real dot
("john at example.com": "the API at api.example.com" reads the same).
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata

import phonenumbers
from stdnum import iban, isbn, luhn

__all__ = ["PHONE_REGIONS", "mask_personal_data", "normalise_text"]

PHONE_REGIONS = ("US", "GB", "DE", "FR", "IN")
"""Regions whose national phone formats ``phonenumbers`` checks; an international ``+…`` number is found in
any of them, and 9+ digits with separators are masked whatever the region."""

MIN_PHONE_DIGITS = 7
"""Fewest digits of a number masked as a phone number (a subscriber number without its area code)."""
_DIGIT_RUN = re.compile(r"\d[\d ()./-]*\d")
_PHONE_TRIES = 20
"""Candidates ``phonenumbers`` examines per region and query: unbounded, 4,000 characters of digits and
slashes cost seconds; numbers past these are still caught by the 9-digit rule."""

# Invisible format characters (Unicode category Cf). Zero-width joiners between two non-ASCII letters are
# kept: Persian, Indic scripts and emoji sequences need them, and there they split nothing Latin.
_FORMAT_CHARS = re.compile("[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f"
                           "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]")
_JOINERS = "\u200c\u200d"

_LOCAL = r"""(?:"[^"\n]{1,64}"|[\w!#$%&'*+=?^`~-]+(?:\.[\w!#$%&'*+=?^`~-]+)*)"""
# An address starts where a run of local-part characters starts, never inside one: tried from every
# character of a 4,000-character run, the match would be quadratic (seconds per hostile query).
_LOCAL_START = r"""(?<![\w.@!#$%&'*+=?^`~-])"""
_LABEL = r"[^\W_](?:[\w-]{0,62})"
_DOTTED = rf"{_LABEL}(?:\.{_LABEL})+"
_IMAGE_DOMAIN = re.compile(r"\.(?:png|jpe?g|gif|svg|webp)$", re.IGNORECASE)
_EMAIL = re.compile(
    rf"{_LOCAL_START}{_LOCAL}(?:@(?:{_DOTTED}|\[[\d.:a-fA-F]+\]|[A-Za-z][\w-]{{2,}})|\s+@\s*{_DOTTED}|\s*@\s+{_DOTTED})"
    r"(?![\w@])"
)
_TLDS = (r"(?:com|org|net|edu|gov|mil|int|io|co|info|biz|me|ai|app|dev|eu|uk|us|de|fr|es|it|nl|be|ch|at|se|no|dk"
         r"|fi|pl|pt|ie|ca|au|nz|in|jp|cn|ru|br|mx|za)")
_BR_AT = r"\s*[\[({<]\s*at\s*[\])}>]\s*"
_BR_DOT = r"\s*[\[({<]\s*dot\s*[\])}>]\s*"
_SPELLED_EMAIL = re.compile(
    rf"{_LOCAL_START}{_LOCAL}(?:{_BR_AT}{_LABEL}(?:(?:{_BR_DOT}|\s+dot\s+|\.){_LABEL})*"
    rf"|\s+at\s+{_LABEL}(?:(?:{_BR_DOT}|\s+dot\s+|\.){_LABEL})*(?:{_BR_DOT}|\s+dot\s+){_TLDS})(?!\w)",
    re.IGNORECASE,
)
_URL_CREDENTIALS = re.compile(r"(\b[a-zA-Z][\w+.-]*://)[^\s/:@]+:[^\s/@]+@")
_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.DOTALL)
_KEYWORD_SECRET = re.compile(
    r"(?i)(\b(?:password|passwd|pwd|passcode|api[_ -]?key|access[_ -]?key|secret(?:[_ -]?key)?|token|auth)"
    r"\s*(?:[:=]|\bis\b)\s*|\bbearer\s+)([\"']?(?!\[)[^\s\"',;]{4,}[\"']?)"
)
_API_KEY = re.compile(r"(?<![\w-])(?:sk|pk|rk)[-_](?=[\w-]*[A-Za-z0-9]{12})[A-Za-z0-9_-]{20,}(?![\w-])")
_HEX = re.compile(r"(?<![\w-])[0-9a-fA-F]{32,}(?![\w-])")
_UUID = re.compile(r"(?<![\w-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w-])")
_TOKEN = re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/=_-]{20,}(?![\w+/=-])")
_SSN = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
_IBAN = re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?!\w)")
_CARD = re.compile(r"(?<![\w./-])(?:\d{4}([ ./-]?)\d{4}\1\d{4}\1\d{1,7}|\d{4}([ -]?)\d{6}\2\d{4,5})(?![\w/-]|\.\d)")
_IPV4 = re.compile(r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\w.]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}(?![\w:])")
_PHONE = re.compile(r"(?<![\w+])\+?\d[\d ().-]{7,}\d(?!\w)")
_YEAR_GROUPS = re.compile(r"(?:1[89]|20)\d\d")
_LONG_DIGITS = re.compile(r"\d{7,}")
_STREET_WORDS = (r"(?:Street|Avenue|Road|Boulevard|Lane|Drive|Terrace|Crescent|Highway|Parkway|Square|Court|Place"
                 r"|Close|Way|St|Ave|Rd|Blvd|Ln|Dr|Ct|Pl|Hwy|Pkwy|Sq)\b\.?")
_ADDRESS = re.compile(
    rf"\b\d{{1,5}}[A-Za-z]?,?\s+(?:[A-Z][\w'-]*\s+){{1,4}}{_STREET_WORDS}(?:\s+(?:N|S|E|W|NE|NW|SE|SW)\b)?"
    r"|\b\d{1,5}[a-z]?,?\s+(?:rue|avenue|boulevard|bd|place|allée|chemin|impasse|quai|via|calle|carrer)"
    r"(?:\s+(?:(?:de|du|des|del|di|da|la|le|les)\s+|l'|d')*[A-ZÀ-Ý][\w'-]*){1,4}"
    r"|\b[A-ZÄÖÜ][\wäöüß-]*(?:straße|strasse|str\.|weg|gasse|platz|allee|damm|ring)\s+\d{1,4}[a-z]?\b"
    r"|\b\d{1,5}\s+[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,2}\s+(?:street|avenue|road|boulevard|lane|drive)\b"
)
_TITLE_NAME = re.compile(r"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Madam|Herr|Frau|Mme|Mlle|Sr|Sra)\.?\s+"
                         r"[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?")
_SAID_NAME = re.compile(r"(?i:\b(my name is|my name's|name\s*:|i am called|call me)\s+)"
                        r"[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+){0,2}")


@functools.cache
def _secret_patterns() -> tuple[re.Pattern, ...]:
    """The token formats detect-secrets keeps up to date (its plugins' ``denylist``), those that name a
    token by its own shape; keyword and entropy plugins are left out (ours are above, tuned for prose)."""
    from detect_secrets.plugins import (
        aws,
        azure_storage_key,
        discord,
        github_token,
        gitlab_token,
        jwt,
        mailchimp,
        openai,
        pypi_token,
        sendgrid,
        slack,
        square_oauth,
        stripe,
        telegram_token,
        twilio,
    )

    plugins = (aws.AWSKeyDetector, azure_storage_key.AzureStorageKeyDetector, discord.DiscordBotTokenDetector,
               github_token.GitHubTokenDetector, gitlab_token.GitLabTokenDetector, jwt.JwtTokenDetector,
               mailchimp.MailchimpDetector, openai.OpenAIDetector, pypi_token.PypiTokenDetector,
               sendgrid.SendGridDetector, slack.SlackDetector, square_oauth.SquareOAuthDetector,
               stripe.StripeDetector, telegram_token.TelegramBotTokenDetector, twilio.TwilioKeyDetector)
    return tuple(pattern for plugin in plugins for pattern in plugin.denylist)



def normalise_text(text: str) -> str:
    """``text`` in NFKC with invisible format characters removed (zero-width joiners between two non-ASCII
    letters kept)."""
    text = unicodedata.normalize("NFKC", text)
    if not _FORMAT_CHARS.search(text):
        return text
    return _FORMAT_CHARS.sub(lambda m: m.group() if _kept_joiner(m) else "", text)


def _kept_joiner(match: re.Match) -> bool:
    text, at = match.string, match.start()
    if match.group() not in _JOINERS or at == 0 or at + 1 >= len(text):
        return False
    before, after = text[at - 1], text[at + 1]
    return not before.isascii() and not after.isascii() and (before.isalpha() or ord(before) > 0x2000) \
        and (after.isalpha() or ord(after) > 0x2000)


def mask_personal_data(text: str) -> str:
    """``text`` normalised (:func:`normalise_text`) with its personal data and secrets replaced by
    placeholders; the module docstring lists what is and is not masked."""
    text = normalise_text(text)
    text = _PEM.sub("[secret]", text)
    text = _URL_CREDENTIALS.sub(r"\1[secret]@", text)
    text = _KEYWORD_SECRET.sub(_keyword_value, text)
    text = _EMAIL.sub(_email_or_file, text)
    text = _SPELLED_EMAIL.sub("[email]", text)
    for pattern in _secret_patterns():
        text = pattern.sub("[secret]", text)
    text = _API_KEY.sub("[secret]", text)
    text = _UUID.sub("[id]", text)
    text = _HEX.sub("[secret]", text)
    text = _TOKEN.sub(_secret_or_word, text)
    text = _IBAN.sub(lambda m: "[iban]" if iban.is_valid(m.group()) else m.group(), text)
    text = _SSN.sub("[id]", text)
    text = _CARD.sub(_card_or_number, text)
    text = _IPV4.sub("[ip]", text)
    text = _IPV6.sub("[ip]", text)
    text = _mask_phones(text)
    text = _LONG_DIGITS.sub("[number]", text)
    text = _ADDRESS.sub("[address]", text)
    text = _TITLE_NAME.sub("[name]", text)
    return _SAID_NAME.sub(lambda m: m.group(1) + " [name]", text)


def _keyword_value(match: re.Match) -> str:
    """The value after "password is" or "token:" is a secret when it looks like one: a digit, a symbol or a
    capital inside it ("hunter2", "Tr0ub4dor&3"), not a word ("the token is expired")."""
    value = match.group(2).strip("\"'")
    if any(c.isdigit() or not c.isalnum() for c in value) or any(c.isupper() for c in value[1:]):
        return match.group(1) + "[secret]"
    return match.group()


def _email_or_file(match: re.Match) -> str:
    found = match.group()
    domain = found.rsplit("@", 1)[1]
    if _IMAGE_DOMAIN.search(domain) or not any(c.isalpha() for c in domain) and "[" not in domain:
        return found  # "icon@2x.png" is a file name, "react@18.2.0" a version
    return "[email]"


def _secret_or_word(match: re.Match) -> str:
    """A long token is a secret when it mixes letters and digits, switches character class often (a random
    key; "internationalization2024" switches once) and has high entropy."""
    token = match.group()
    longest = max(re.split(r"[-_]", token), key=len)
    if len(longest) < 20 or not any(c.isdigit() for c in longest) or not any(c.isalpha() for c in longest):
        return token
    kinds = ["d" if c.isdigit() else "u" if c.isupper() else "l" if c.islower() else "o" for c in longest]
    switches = sum(a != b for a, b in zip(kinds, kinds[1:]))
    return "[secret]" if switches >= len(longest) / 5 and _entropy(longest) >= 3.5 else token


def _entropy(text: str) -> float:
    counts = {c: text.count(c) for c in set(text)}
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _card_or_number(match: re.Match) -> str:
    digits = re.sub(r"\D", "", match.group())
    if not 13 <= len(digits) <= 19:
        return match.group()
    return "[card]" if luhn.is_valid(digits) else "[number]"


def _phone_length(digits_and_separators: str) -> bool:
    return sum(c.isdigit() for c in digits_and_separators) >= MIN_PHONE_DIGITS


def _mask_phones(text: str) -> str:
    # The matcher is slow and some regions accept 5-digit short numbers ("model 16401"): only runs of
    # digits and separators as long as a subscriber number are examined, and only such matches kept.
    if not any(_phone_length(run.group()) for run in _DIGIT_RUN.finditer(text)):
        return text
    spans: list[list[int]] = []
    for region in PHONE_REGIONS:
        for found in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID,
                                                     max_tries=_PHONE_TRIES):
            if _phone_length(found.raw_string):
                spans.append([found.start, found.end])
    merged: list[list[int]] = []
    for start, end in sorted(spans):  # one number found in several regions, maybe with different edges
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        text = text[:start] + "[phone]" + text[end:]
    return _PHONE.sub(_phone_or_digits, text)


def _phone_or_digits(match: re.Match) -> str:
    found = match.group()
    if found.isdigit():  # one unbroken run: an account or card number, masked as [number]
        return found
    if sum(c.isdigit() for c in found) < 9:
        return found
    groups = re.findall(r"\d+", found)
    if all(_YEAR_GROUPS.fullmatch(group) for group in groups):  # "1914-1918 1939-1945": years
        return found
    if isbn.is_valid(found.strip(" ().")):  # a book, not a person
        return found
    return "[phone]"
