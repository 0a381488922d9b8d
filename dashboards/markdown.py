"""Agent-controlled text in Streamlit's Markdown, shown as the text it is.

Streamlit renders Markdown in ``st.markdown``, ``st.title``, ``st.caption``,
``st.error``/``warning``/``info``/``success`` and widget labels. The text trajwatch shows
there — a goal, an agent's name, a session id, a ``?session=`` parameter, an alert's
reason, a source reference — is written by the agent being watched, which is the
adversary: ``![x](http://attacker/pixel)`` in an agent name would load an image in the
operator's browser (telling the attacker who looks, and when), a ``[link](...)`` would
render as a link. :func:`escape` makes such text literal:

- every ASCII punctuation character is backslash-escaped (CommonMark lets any of them
  be, and then shows it as itself): no link, image, emphasis, HTML, ``$`` maths or
  Streamlit ``:red[...]`` directive can form;
- a line break becomes a space, so no heading, list or quote can start;
- bare URLs and e-mail addresses are autolinked by GitHub-flavoured Markdown *after*
  escapes are resolved (Streamlit's remark-gfm finds ``http://``, ``www.`` and
  ``a@b.c`` in the text itself), so a WORD JOINER (U+2060, invisible and zero-width)
  goes after ``http``/``https`` before ``://``, after ``www`` before ``.``, and after
  ``@``: the text looks the same, and no link is made of it.

Tables (``st.dataframe``), ``st.json``, ``st.text`` and selectbox options are plain text
already and need nothing.
"""

from __future__ import annotations

import re
import string

WORD_JOINER = "\u2060"
_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")
_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")
_AUTOLINK = re.compile(r"(?i)(https?(?=://)|www(?=\.)|@)")


def escape(text: object) -> str:
    """``text`` as Markdown that renders as exactly that text, on one line, linking
    nothing.

    >>> escape("![x](pixel.gif)")
    '\\\\!\\\\[x\\\\]\\\\(pixel\\\\.gif\\\\)'
    >>> escape("# fix\\n- the :red[bug]")
    '\\\\# fix \\\\- the \\\\:red\\\\[bug\\\\]'
    >>> escape("see http://a.example") == "see http" + WORD_JOINER + "\\\\:\\\\/\\\\/a\\\\.example"
    True
    """
    one_line = _BREAKS.sub(" ", str(text))
    return _PUNCTUATION.sub(r"\\\1", _AUTOLINK.sub(r"\1" + WORD_JOINER, one_line))
