"""Masking personal data and secrets in production queries before anything stores or shows them.

:func:`mask_personal_data` runs on every query a log holds
(:func:`coverage_core.checks.query_log.read_traffic` applies it as it reads),
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
* ``[id]``: UUIDs, US social security numbers (``123-45-6789``), UK National Insurance numbers
  (``AB 12 34 56 C``), Spanish DNI/NIE and Italian codici fiscali whose check letter holds
  (``python-stdnum``), and the number after "passport", "ID card", "identity number", "driver's
  licence" and their French, German and Spanish names (6-12 letters and digits, 2 digits at least);
* ``[iban]``: IBANs whose checksum holds (``python-stdnum``);
* ``[card]``: card numbers (13-19 digits, unbroken or in groups split by
  spaces, dashes, dots or slashes) whose Luhn checksum holds; such groups
  failing it become ``[number]``;
* ``[ip]``: IPv4 addresses, and IPv6 ones full or shortened with ``::`` (``2001:db8::8a2e:370:7334``;
  checked by :mod:`ipaddress`, with a group of 3+ digits, so "A::B" in C++ stays);
* ``[mac]``: MAC addresses (``00:1A:2B:3C:4D:5E``, with dashes, or Cisco's ``001a.2b3c.4d5e``);
* ``[birthdate]``: a full date (day, month and year, in figures or words) after "date of birth", "DOB",
  "born", "birthday" and their French, German and Spanish words; a year alone ("born in 1756") stays;
* ``[phone]``: numbers Google's ``phonenumbers`` finds valid in
  :data:`PHONE_REGIONS` or in international form (``+…``), any run of 9+
  digits with separators (year ranges such as "1914-1918 1939-1945" stay), and
  local numbers written ``555-1234`` (a range of years such as "reigned 330-1453" or
  "(476-1453)" stays);
* ``[number]``: any other run of 7+ digits (accounts, customer numbers);
* ``[address]``: street addresses written as a house number and a street
  word ("221B Baker Street", "1600 Pennsylvania Ave", "12 rue de la Paix",
  "Hauptstraße 5");
* ``[name]``: a capitalised name after a title (Mr, Mrs, Ms, Dr, Prof…) or
  after "my name is" / "name:".

**Not masked**: names anywhere else (no named-entity model is bundled and
none may be downloaded), street names without a house number, towns and
postcodes alone, dates with no birth word before them, national ID formats
other than those above when no ID word precedes them, local numbers written
with spaces or dots ("555 1234", as often an amount), secrets shorter than
20 characters that follow no known format and no keyword, and e-mail
addresses spelled with a plain " at " and a real dot ("john at
example.com": "the API at api.example.com" reads the same).
"""

from __future__ import annotations

import functools
import ipaddress
import math
import re
import unicodedata

import phonenumbers
from stdnum import iban, isbn, luhn
from stdnum.es import dni, nie
from stdnum.it import codicefiscale

from coverage_core.invisible import strip_invisible

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
# Shortened IPv6 ("fe80::1ff:fe23:4567:890a"): a candidate with "::", kept when ipaddress reads it.
_IPV6_SHORT = re.compile(r"(?<![\w:.])(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}(?![\w:])")
_MAC = re.compile(r"(?<![\w:.-])[0-9a-fA-F]{2}([:-])(?:[0-9a-fA-F]{2}\1){4}[0-9a-fA-F]{2}(?![\w:-]|\.\w)"
                  r"|(?<![\w.])(?=[\d.]*[a-fA-F])[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}(?![\w.])")
# A birth word, then a full date: 12/05/1985, 1985-05-12, 12 May 1985, 12th of May, 1985, May 12, 1985.
_MONTH = (r"(?:jan(?:uary|vier|uar)?|feb(?:ruary|ruar)?|f[ée]v(?:rier)?|m[äa]r(?:ch|s|z)?|apr(?:il)?|avr(?:il)?"
          r"|may|mai|ma[iy]o|june?|juin|juni|july?|juil(?:let)?|juli|aug(?:ust)?|ao[uû]t|sep(?:t(?:ember)?)?"
          r"|oct(?:ober)?|okt(?:ober)?|nov(?:ember)?|de[cz](?:ember)?|d[ée]c(?:embre)?|enero|febrero|marzo|abril"
          r"|junio|julio|agosto|septiembre|octubre|noviembre|diciembre)\.?")
_DAY = r"(?:[0-3]?\d)(?:st|nd|rd|th|er)?"
_FULL_DATE = (rf"(?:\d{{1,2}}[./-]\d{{1,2}}[./-](?:\d{{4}}|\d{{2}})|\d{{4}}[./-]\d{{1,2}}[./-]\d{{1,2}}"
              rf"|{_DAY}\.?\s+(?:of\s+|de\s+)?{_MONTH},?\s+(?:de\s+)?\d{{4}}|{_MONTH}\s+{_DAY},?\s+\d{{4}})")
_BIRTH_DATE = re.compile(
    r"(?i)(\b(?:date\s+of\s+birth|birth\s*date|birthday|dob|d\.o\.b\.?|born(?:\s+on)?|geburtsdatum"
    r"|geboren(?:\s+am)?|date\s+de\s+naissance|n[ée]e?\s+le|fecha\s+de\s+nacimiento|nacid[oa]\s+el)"
    rf"(?:\s*(?:is|was|:|=|-))?\s*)(?<!\w){_FULL_DATE}(?![\w/.-]\d|\w)"
)
# An identity document's word, maybe "number"/"no."/"#", then its number: 6-12 letters and digits, 2+ digits.
_ID_WORDS = (r"(?:passport|passeport|reisepass|pasaporte|passaporto|(?:national\s+)?id(?:entity)?\s+card"
             r"|identity\s+(?:card|document|number)|national\s+id(?:entity)?|id\s+(?:number|no\.?|#)"
             r"|personalausweis(?:nummer)?|ausweis(?:nummer)?|carte\s+d['’]identit[ée]|driver['’]?s\s+licen[cs]e"
             r"|driving\s+licen[cs]e|licen[cs]e\s+(?:number|no\.?|#)|f[üu]hrerschein(?:nummer)?"
             r"|permis\s+de\s+conduire|documento\s+de\s+identidad"
             # In capitals only: "nie" is "never" in German and "no" in Polish.
             r"|(?-i:DNI|NIE|NIF))")
_KEYWORD_ID = re.compile(
    rf"(?i)(\b{_ID_WORDS}(?:\s+(?:number|num(?:ber)?\.?|no\.?|nr\.?|nummer|num[ée]ro|n[úu]mero|#))?"
    r"(?:\s*(?:is|:|=|#))?\s*)(?=[A-Za-z]*\d[A-Za-z]*\d)([A-Za-z0-9]{6,12})(?![\w-])"
)
_NINO = re.compile(r"\b(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
_SPANISH_ID = re.compile(r"(?<![\w-])(?:\d{8}|[XYZ]-?\d{7})-?[A-Z](?![\w-])")
_CODICE_FISCALE = re.compile(r"\b[A-Z]{6}\d{2}[A-Z]\d{2}[A-Z]\d{3}[A-Z]\b")
_PHONE = re.compile(r"(?<![\w+])\+?\d[\d ().-]{7,}\d(?!\w)")
_YEAR_GROUPS = re.compile(r"(?:1[89]|20)\d\d")
# A local number without its area code ("555-1234"): US exchanges never start with 0 or 1.
_LOCAL_PHONE = re.compile(r"(?<![\w.,/+-])[2-9]\d\d-\d{4}(?!\w|[-./,]\d)")
_RANGE_BEFORE = re.compile(r"(?i)\b(?:from|between|in|circa|c\.|ca\.|pages?|pp\.?|years?|reign(?:ed)?|ruled"
                           r"|lived|era|period|AD|BC)\s*$")
_RANGE_AFTER = re.compile(r"\s*(?:AD|BC|BCE|CE|AH)\b")
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
    letters kept: :func:`~coverage_core.invisible.strip_invisible`)."""
    return strip_invisible(unicodedata.normalize("NFKC", text))


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
    # Birth dates and ID numbers before cards and phones: "DOB 12-05-1985" is not a phone number, and a
    # passport number is masked whole, not as "X[number]".
    text = _BIRTH_DATE.sub(r"\1[birthdate]", text)
    text = _KEYWORD_ID.sub(r"\1[id]", text)
    text = _national_ids(text)
    text = _CARD.sub(_card_or_number, text)
    text = _IPV4.sub("[ip]", text)
    text = _IPV6.sub("[ip]", text)
    text = _IPV6_SHORT.sub(_short_ipv6, text)
    text = _MAC.sub("[mac]", text)
    text = _mask_phones(text)
    text = _LOCAL_PHONE.sub(_local_phone_or_range, text)
    text = _LONG_DIGITS.sub("[number]", text)
    text = _ADDRESS.sub("[address]", text)
    text = _TITLE_NAME.sub("[name]", text)
    return _SAID_NAME.sub(lambda m: m.group(1) + " [name]", text)


def _national_ids(text: str) -> str:
    """UK National Insurance numbers by their shape; Spanish DNI/NIE and Italian codici fiscali when their
    check letter holds (a product code of the same shape rarely does)."""
    text = _NINO.sub("[id]", text)
    text = _SPANISH_ID.sub(lambda m: "[id]" if dni.is_valid(m.group()) or nie.is_valid(m.group()) else m.group(),
                           text)
    return _CODICE_FISCALE.sub(lambda m: "[id]" if codicefiscale.is_valid(m.group()) else m.group(), text)


def _short_ipv6(match: re.Match) -> str:
    """A "::" candidate is an address when :mod:`ipaddress` reads it and one group has 3+ digits ("A::B",
    "ab::cd" in code stay)."""
    found = match.group()
    if "::" not in found or not any(len(group) >= 3 for group in found.split(":")):
        return found
    try:
        ipaddress.IPv6Address(found)
    except ValueError:
        return found
    return "[ip]"


def _local_phone_or_range(match: re.Match) -> str:
    """"555-1234" is a local phone number, unless it reads as a range of years: after "from", "in",
    "reigned"..., before "AD"/"BC", or alone in brackets with the first number the smaller ("(476-1453)")."""
    text, start, end = match.string, match.start(), match.end()
    if _RANGE_BEFORE.search(text[max(0, start - 20):start].rstrip("( ")) or _RANGE_AFTER.match(text, end):
        return match.group()
    first, second = (int(part) for part in match.group().split("-"))
    if text[start - 1:start] == "(" and text[end:end + 1] == ")" and first < second <= 2100:
        return match.group()
    return "[phone]"


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
