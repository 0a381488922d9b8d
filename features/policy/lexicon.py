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
    "CAP_RE",
    "DATABASE_RE",
    "DEPLOY_RE",
    "EXCEPT_RE",
    "MAIL_RE",
    "MIGRATION_RE",
    "MODIFY_RE",
    "NEG_RE",
    "ONLY_RE",
    "PAY_RE",
    "PLACE_AFTER_RE",
    "PLACE_RE",
    "PUSH_RE",
    "READ_ONLY_RE",
    "READ_RE",
    "SPEND_RE",
    "SPEND_TOOL_VERBS",
    "WITHOUT_RE",
    "negation",
]

_B = r"(?<![\w])"  # a word start that also holds before non-ASCII letters
_E = r"(?![\w])"

NEG_RE = re.compile(
    rf"{_B}(?:never|not|no|don't|must\s*n't|cannot|forbidden|prohibited"  # en
    r"|nie|niemals|nicht|kein(?:e|en|er|es)?|verboten"  # de
    r"|nunca|jam[aá]s|ni|nada\s+de|prohibid[oa]|ning[uú]n[oa]?"  # es
    r"|ne|n'|pas|interdit|aucun(?:e)?"  # fr
    rf"|n[aã]o|proibid[oa]|nenhum[a]?){_E}"  # pt
    r"|しない|ないこと|ないで|ません|禁止|してはいけない|不要|不得|不能|绝不|切勿|别|勿"  # ja, zh
    r"|금지|하지\s*마|마세요|말\s*것|안\s*됩니다|안\s*됨"  # ko
)
"""A prohibition."""
_PORTUGUESE_RE = re.compile(r"[ãõ]|çã|çõ")
"""Letters only Portuguese writes (``não``, ``migração``, ``operações``): in its text a bare
``no`` is "in the" (``no dia``, ``no servidor``), not Spanish's "not"."""


def negation(low: str) -> re.Match[str] | None:
    """The first prohibition :data:`NEG_RE` finds in lower-cased ``low``, a bare ``no`` in
    Portuguese text aside.

    >>> negation("no modifiques la base de datos")[0]
    'no'
    >>> negation("mantém o discord informado no dia da migração") is None
    True
    >>> negation("não mexa no servidor")[0]
    'não'
    """
    portuguese: bool | None = None
    for m in NEG_RE.finditer(low):
        if m[0] == "no":
            if portuguese is None:
                portuguese = _PORTUGUESE_RE.search(low) is not None
            if portuguese:
                continue
        return m
    return None


ASK_RE = re.compile(
    rf"{_B}(?:ask\w*|approv\w*|permission|confirm\w*|consent|sign[\s-]?off|go[\s-]ahead"  # en
    r"|frag\w*|bestätig\w*|genehmig\w*|freigabe|erlaubnis|zustimm\w*"  # de
    r"|pregunt\w*|pregúnt\w*|confirmaci[oó]n|aprobaci[oó]n|permiso|autorizaci[oó]n|consult\w*"  # es
    r"|demand\w*|autorisation|approbation|accord"  # fr
    rf"|confirma[çc][ãa]o|aprova[çc][ãa]o|permiss[ãa]o|autoriza[çc][ãa]o){_E}"  # pt
    # ja, zh: not the done forms, which describe an object ("承認済みの請求書": the
    # approved invoices; "已批准的")
    r"|(?<!已)(?:確認|承認|許可|确认|批准|许可|同意)(?!済|され|了|过|過)|聞いて|尋ね|询问|请示"
)
"""Asking a person: approval, confirmation, permission."""

WITHOUT_RE = re.compile(
    rf"{_B}(?:without|ohne|sin|sans|sem|unless){_E}|なしで|なしに|せずに|未经|没有"
)
BEFORE_RE = re.compile(
    rf"{_B}(?:before|prior\s+to|vor(?:her)?|bevor|antes|avant|first|zuerst|primero"
    rf"|d'abord|primeiro){_E}|前に|之前|先"
)
AFTER_RE = re.compile(
    rf"{_B}(?:after|once|nach|sobald|después|despues|una\s+vez\s+que|après|apres"
    rf"|une\s+fois\s+que|depois|assim\s+que|ab){_E}|以降|之后|(?<![最前午])後"
)

ONLY_RE = re.compile(
    rf"{_B}(?:only|exclusively|nur|ausschließlich|solo|s[oó]lo|solamente|[uú]nicamente"
    rf"|uniquement|seulement|s[oó]|somente|apenas){_E}|のみ|だけ|只|仅"
)
"""A scope: the only thing allowed."""

PLACE_RE = re.compile(
    rf"{_B}(?:in|into|under|within|inside|against|for|on|im|unter|innerhalb|für|auf|en|dentro"
    rf"|bajo|para|dans|sous|pour|sur|em|no|na|nos|nas|sob){_E}\s*$"
)
"""A preposition of place just before an object ("apply in envs/prod", "en envs/prod",
"dans envs/prod"): searched in the casefolded text before the object."""
PLACE_AFTER_RE = re.compile(r"^\s*(?:で|では|に|において|中|里|内)")
"""The same after the object, in Japanese and Chinese ("envs/prod で")."""

READ_ONLY_RE = re.compile(
    r"read[\s-]?only|schreibgeschützt|nur\s+lesend|(?:solo|somente|s[oó])\s+(?:de\s+)?lectura"
    r"|(?:somente|apenas)\s+(?:de\s+)?leitura|lecture\s+seule|sola\s+lettura|alleen[\s-]lezen"
    r"|読み取り専用|只读|읽기\s*전용"
)

EXCEPT_RE = re.compile(
    rf"{_B}(?:except(?:\s+for)?|apart\s+from|other\s+than|besides|außer|ausgenommen"
    rf"|mit\s+ausnahme\s+von|bis\s+auf|excepto|salvo|a\s+excepci[oó]n\s+de|sauf|hormis"
    rf"|à\s+part|except[ée]|exceto|com\s+exce[çc][ãa]o\s+de|fora){_E}|以外|を除いて|を除き|除了"
)
"""An exception to a scope ("read-only except schema scratch_kim")."""

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
SPEND_RE = re.compile(
    rf"{_B}(?:orders?|trades?|bestellung\w*|auftr[aä]g\w*|pedidos?|[oó]rden(?:es)?|compras?"
    rf"|commandes?|achats?|encomendas?){_E}|注文|発注|订单|下单"
)
"""Spending by its object (an order, a trade, a purchase), with :data:`PAY_RE` (its verbs):
what a spending cap ("no order above 800 EUR without approval") is about."""
SPEND_TOOL_VERBS = ("order", "trade", "book", "reserv", "pay", "purchas", "buy", "checkout")
"""How tools that spend are named (``place_order``, ``book_fare``, ``submit_purchase``): the
English of tool names, whatever the language of the rule."""
DEPLOY_RE = re.compile(
    rf"{_B}(?:deploy\w*|despliegue\w*|desplieg\w*|d[ée]ploi\w*|implanta\w*|rollout\w*){_E}"
    r"|デプロイ|部署"
)
PUSH_RE = re.compile(rf"{_B}(?:push\w*|force[\s-]?push\w*){_E}|プッシュ|推送")
PUBLISH_RE = re.compile(
    rf"{_B}(?:publish\w*|ver[öo]ffentlich\w*|publica\w*|publie\w*|publier|pubblica\w*"
    rf"|publiceer\w*|publiceren|opublikow\w*){_E}|公開|公开|发布|發佈|게시|공개"
)
"""Publishing: releasing a post, an episode or a package to its audience."""

# -- markers of the shapes read by features.policy.structured's second pass ---------------

UNTIL_RE = re.compile(
    rf"{_B}(?:unless|until|till|without|except\s+when|bis|es\s+sei\s+denn|hasta(?:\s+que)?|salvo"
    rf"|a\s+menos\s+que|jusqu'[àa]|sauf\s+si|à\s+moins\s+que|at[ée]|a\s+n[ãa]o\s+ser){_E}"
    r"|まで|なしで|なしに|せずに|除非|直到|未经"
)
"""A condition a prohibition waits for ("never X unless/until …")."""
CONSENT_RE = re.compile(
    rf"{_B}(?:user|users|i|me|my|human|owner|operator|principal|told|tell|tells|says?|said"
    rf"|explicit\w*|request(?:ed|s)|asks?|asked|instruct\w*|benutzer\w*|nutzer\w*|anwender\w*"
    rf"|ausdrücklich\w*|usuari[oa]s?|expl[ií]cit\w*|utilisateur\w*|explicite\w*|usu[áa]ri[oa]s?){_E}"
    r"|ユーザー|明示|用户|明确"
)
"""Someone's say-so: what "unless/until" waits for when the rule is an approval."""
ASK_VERB_RE = re.compile(
    rf"{_B}(?:ask|frag\w*|nachfrag\w*|rückfrag\w*|pregunt\w*|consult\w*|demande\w*|pergunt\w*){_E}"
    r"|聞いて|尋ね|询问|请示"
)
"""Asking (a verb), as opposed to the noun of an approval."""
REQUIRES_RE = re.compile(
    rf"{_B}(?:requires?|required|needs?|must\s+be\s+(?:approved|confirmed)|subject\s+to"
    rf"|erfordert|benötigt|braucht|requiere\w*|necesita\w*|exige\w*|nécessite\w*|requer\w*"
    rf"|precisa\w*){_E}|必要|需要"
)
SEND_RE = re.compile(
    rf"{_B}(?:send\w*|sent|reply|replies|forward\w*|senden|sende|verschick\w*|env[ií]\w*|envo\w*"
    rf"|respond\w*|transmet\w*){_E}|送信|发送|寄"
)
MESSAGE_RE = re.compile(
    rf"{_B}(?:messages?|nachricht\w*|mensajes?|mensage\w*|mensagens?){_E}|メッセージ|消息"
)
CLICK_RE = re.compile(
    rf"{_B}(?:click\w*|press\w*|tap|taps|hit|klick\w*|drück\w*|clic\w*|cliqu\w*|clica\w*"
    rf"|puls\w*|appu\w*){_E}|クリック|押|点击|按"
)
DELETE_RE = re.compile(
    rf"{_B}(?:delet\w*|remov\w*|lösch\w*|entfern\w*|borr\w*|elimin\w*|supprim\w*|efface\w*"
    rf"|apag\w*|exclu\w*){_E}|削除|删除"
)
FILE_RE = re.compile(
    rf"{_B}(?:files?|folders?|director(?:y|ies)|dateien|datei|ordner|verzeichnis\w*|archivos?"
    rf"|carpetas?|fichiers?|dossiers?|arquivos?|pastas?){_E}|ファイル|フォルダ|文件"
)
FORCE_RE = re.compile(rf"{_B}force[\s-]?push\w*|push\w*\s+(?:with\s+)?--?f(?:orce)?{_E}")
THERE_RE = re.compile(
    rf"{_B}(?:there|therein|it|dort|dorthin|darin|allí|ahí|allá|là|lá|ali){_E}|そこ|那里|其中"
)
DATA_NOUN_RE = re.compile(
    rf"{_B}(?:schemas?|databases?|db|tables?|datasets?|buckets?|keyspaces?|warehouses?|esquemas?"
    rf"|tablas?|tabelas?|tabellen?|schémas?|datenbank\w*){_E}|スキーマ|テーブル|数据库|表"
)
_NUMBER = (
    r"(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d{1,3}(?:\.\d{3})+(?:,\d{1,2})?"
    r"|\d{1,12}(?:[.,]\d{1,2})?)(?![\d])"
)
"""An amount: grouped by commas (``10,000.50``) or by dots (``10.000,50``), or plain."""
_CURRENCY = r"(?:[$€£¥]|usd|eur|gbp|chf|us\$)"
CAP_RE = re.compile(rf"(?:<=|=<|≤|<)\s*{_CURRENCY}?\s*{_NUMBER}", re.IGNORECASE)
"""An upper bound written with a comparison sign ("<= 250 USDC", "< $1,000"): the same in
every language the rule is written in (``n``: the number)."""
AMOUNT_RE = re.compile(
    r"(?P<noun>[^\W\d_]{3,40})?\s*(?:\s(?:of|de|von|d')\s+)?(?:amounts?\s+)?"
    r"(?:above|over|more\s+than|greater\s+than|larger\s+than|higher\s+than|exceeding|exceeds?"
    r"|beyond|in\s+excess\s+of|>|über|mehr\s+als|oberhalb\s+von|más\s+de|mayor(?:es)?\s+(?:a|de|que)"
    r"|superior(?:es)?\s+a|plus\s+de|au-delà\s+de|supérieur(?:e|s)?\s+à|acima\s+de|mais\s+de"
    rf"|超过|超過)\s*{_CURRENCY}?\s*{_NUMBER}"
    rf"|(?P<noun2>[^\W\d_]{{3,40}})?\s*(?:\s(?:of|de|von)\s+)?{_CURRENCY}?\s*"
    rf"(?P<n2>\d{{1,3}}(?:,\d{{3}})+|\d{{1,12}})\s*{_CURRENCY}?\s+(?:or|oder|o|ou)\s+"
    r"(?:more|above|higher|mehr|más|plus|mais)\b"
    rf"|{_CURRENCY}?\s*(?P<n3>\d{{1,3}}(?:,\d{{3}})+(?:\.\d{{1,2}})?|\d{{1,12}}(?:\.\d{{1,2}})?)(?![\d])"
    r"\s*(?:[$€£¥]|usd|eur|gbp|chf|円|ドル|ユーロ|元|美元|欧元)?\s*(?:を超える|を超す|を超え|超の|超过|超過)",
    re.IGNORECASE,
)
"""An amount limit ("refunds above 50 EUR", "Erstattungen über 50 €", "refunds of $1,000
or more", "1000 USD を超える注文"): the noun before it and the number (``n``; ``n2`` for "N or
more"; ``n3`` for a comparison after the number, as Japanese and Chinese write it)."""
