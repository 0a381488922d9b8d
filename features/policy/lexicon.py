"""The few words a rule is built from, in the languages agents are instructed in.

:mod:`features.policy.structured` reads a rule from its *structure* — the objects it names
(backticked commands, paths, branches, namespaces, ``@domains``, table and account
identifiers, a time) and one or two markers of what is said about them: forbidden, needs
a person's approval, the only thing allowed. Those markers are closed-class words (negation,
"only", "without", "before", "ask/confirm"), a handful per language, so a short list per
language covers every sentence of that language; the content words (what is forbidden) are
never listed here. English, German, Spanish, French, Portuguese, Japanese and Chinese.

Every pattern is searched in casefolded text, bounded and linear (alternations of literals).
"""

from __future__ import annotations

import re

__all__ = [
    "AFTER_RE",
    "ASK_RE",
    "BEFORE_RE",
    "DATABASE_RE",
    "DEPLOY_RE",
    "MAIL_RE",
    "MIGRATION_RE",
    "MODIFY_RE",
    "NEG_RE",
    "ONLY_RE",
    "PAY_RE",
    "PUSH_RE",
    "READ_ONLY_RE",
    "READ_RE",
    "WITHOUT_RE",
]

_B = r"(?<![\w])"  # a word start that also holds before non-ASCII letters
_E = r"(?![\w])"

NEG_RE = re.compile(
    rf"{_B}(?:never|not|no|don't|must\s*n't|cannot|forbidden|prohibited"  # en
    r"|nie|niemals|nicht|kein(?:e|en|er|es)?|verboten"  # de
    r"|nunca|jam[aá]s|ni|nada\s+de|prohibid[oa]"  # es
    r"|ne|n'|pas|interdit|aucun(?:e)?"  # fr
    rf"|n[aã]o|proibid[oa]){_E}"  # pt
    r"|しない|ないこと|ないで|ません|禁止|してはいけない|不要|不得|不能|绝不|切勿|别|勿"  # ja, zh
)
"""A prohibition."""

ASK_RE = re.compile(
    rf"{_B}(?:ask\w*|approv\w*|permission|confirm\w*|consent|sign[\s-]?off"  # en
    r"|frag\w*|bestätig\w*|genehmig\w*|freigabe|erlaubnis|zustimm\w*"  # de
    r"|pregunt\w*|pregúnt\w*|confirmaci[oó]n|aprobaci[oó]n|permiso|autorizaci[oó]n|consult\w*"  # es
    r"|demand\w*|autorisation|approbation|accord"  # fr
    rf"|confirma[çc][ãa]o|aprova[çc][ãa]o|permiss[ãa]o|autoriza[çc][ãa]o){_E}"  # pt
    r"|確認|承認|許可|聞いて|尋ね|确认|批准|许可|同意|询问|请示"  # ja, zh
)
"""Asking a person: approval, confirmation, permission."""

WITHOUT_RE = re.compile(rf"{_B}(?:without|ohne|sin|sans|sem|unless){_E}|なしで|せずに|未经|没有")
BEFORE_RE = re.compile(
    rf"{_B}(?:before|prior\s+to|vor(?:her)?|bevor|antes|avant|first|zuerst|primero"
    rf"|d'abord|primeiro){_E}|前に|之前|先"
)
AFTER_RE = re.compile(rf"{_B}(?:after|nach|después|despues|après|apres|depois|ab){_E}|以降|之后")

ONLY_RE = re.compile(
    rf"{_B}(?:only|exclusively|nur|ausschließlich|solo|s[oó]lo|solamente|[uú]nicamente"
    rf"|uniquement|seulement|s[oó]|somente|apenas){_E}|のみ|だけ|只|仅"
)
"""A scope: the only thing allowed."""

READ_ONLY_RE = re.compile(
    r"read[\s-]?only|schreibgeschützt|nur\s+lesend|(?:solo|somente|s[oó])\s+(?:de\s+)?lectura"
    r"|somente\s+leitura|lecture\s+seule|読み取り専用|只读"
)

# -- what an action is about (content classes with their forms across the languages) ----

MIGRATION_RE = re.compile(r"migra\w*|マイグレーション|迁移")
DATABASE_RE = re.compile(
    rf"{_B}(?:database|datenbank|db|base\s+de\s+datos|banco\s+de\s+dados"
    r"|base\s+de\s+donn[ée]es)|データベース|数据库"
)
MODIFY_RE = re.compile(
    rf"{_B}(?:modif\w*|chang\w*|alter\w*|writ\w*|delet\w*|änder\w*|schreib\w*|lösch\w*"
    rf"|escrib\w*|borr\w*|[ée]cri\w*|supprim\w*|escrev\w*|apag\w*|edit\w*|mudar|toca\w*|touch\w*){_E}"
    r"|変更|編集|修改|写入|删除"
)
READ_RE = re.compile(
    rf"{_B}(?:read|query|select|access|lies|lis|leas|lee|consult\w*|interroge\w*|leia|l[eê]r"
    rf"|abfrag\w*){_E}|読|查询|读取"
)
MAIL_RE = re.compile(rf"{_B}(?:e-?mails?|mails?|correos?|courriels?){_E}|メール|邮件")
PAY_RE = re.compile(
    rf"{_B}(?:book\w*|reserv\w*|pay\w*|purchas\w*|buy\w*|buch\w*|bezahl\w*|kauf\w*"
    rf"|pag\w*|compr\w*|r[ée]serv\w*|pai\w*|achet\w*){_E}|予約|支払|购买|预订|支付"
)
DEPLOY_RE = re.compile(
    rf"{_B}(?:deploy\w*|despliegue\w*|desplieg\w*|d[ée]ploi\w*|implanta\w*|rollout\w*){_E}"
    r"|デプロイ|部署"
)
PUSH_RE = re.compile(rf"{_B}(?:push\w*|force[\s-]?push\w*){_E}|プッシュ|推送")
