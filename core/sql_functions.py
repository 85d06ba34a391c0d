"""The functions a tenant's SQL may call: an allow-list, not a deny-list.

A tenant's query (``core.sql_guard``) may call the ordinary functions of analysis:
aggregates (with ClickHouse's combinators: ``sumIf``, ``uniqExactOrNull``, ``avgState``…),
window functions, conditionals, comparisons and logic, arithmetic and math, strings,
regular expressions, dates and times, type conversions, arrays, tuples and maps, JSON
and hashing. Every other name is refused, whatever it does: the functions that tell
about the node (``hostName``, ``version``, ``uptime``, ``currentUser``,
``currentDatabase``, ``getSetting``, ``timezone``…), read around the tenant
(``dictGet``, ``joinGet``, ``file``…), stall or fail on purpose (``sleep``, ``throwIf``),
and any function a later ClickHouse adds (docs/security.md#tenants).

Names compare case-insensitively: ClickHouse resolves a name either exactly or
case-insensitively, so a spelling that differs in case from an allowed name is that
function or no function at all.
"""

from __future__ import annotations

_AGGREGATES = """
count sum avg min max any anyLast anyHeavy argMin argMax uniq uniqExact uniqCombined
uniqCombined64 uniqHLL12 uniqTheta groupArray groupUniqArray groupArraySample
groupArraySorted groupConcat groupBitAnd groupBitOr groupBitXor sumWithOverflow sumKahan
median medianExact quantile quantiles quantileExact quantilesExact quantileTDigest
quantilesTDigest quantileTiming quantileDeterministic quantileExactWeighted
stddevPop stddevSamp varPop varSamp covarPop covarSamp corr skewPop kurtPop topK
topKWeighted histogram simpleLinearRegression first_value last_value any_value
countDistinct approx_distinct stddev variance boundingRatio avgWeighted sumMap minMap
maxMap entropy mode
"""
_WINDOW = """
row_number rank dense_rank percent_rank cume_dist ntile lag lead lagInFrame leadInFrame
nth_value
"""
_CONDITIONAL_AND_LOGIC = """
if multiIf case coalesce ifNull nullIf isNull isNotNull assumeNotNull toNullable
greatest least transform and or not xor equals notEquals less greater lessOrEquals
greaterOrEquals like notLike ilike notILike between isNaN isFinite isInfinite
"""
_MATH = """
plus minus multiply divide intDiv intDivOrZero modulo moduloOrZero negate abs sign
round roundBankers floor ceil ceiling trunc truncate sqrt cbrt exp exp2 exp10 ln log
log2 log10 log1p pow power sin cos tan asin acos atan atan2 pi e gcd lcm
roundToExp2 roundDown bitAnd bitOr bitXor bitNot bitShiftLeft bitShiftRight
rand rand32 rand64 randCanonical mod
"""
_STRING = """
length lengthUTF8 char_length character_length empty notEmpty lower upper lowerUTF8
upperUTF8 reverse reverseUTF8 concat concatWithSeparator concat_ws substring substr
substringUTF8 left right leftUTF8 rightUTF8 trim ltrim rtrim trimBoth trimLeft
trimRight leftPad rightPad lpad rpad repeat replace replaceOne replaceAll
replaceRegexpOne replaceRegexpAll position locate positionCaseInsensitive positionUTF8
strpos startsWith endsWith match extract extractAll extractAllGroups multiSearchAny
multiMatchAny countSubstrings countMatches splitByChar splitByString splitByRegexp
splitByWhitespace arrayStringConcat format formatReadableSize formatReadableQuantity
formatReadableTimeDelta toValidUTF8 normalizeUTF8NFC tokens ngrams hex unhex
base64Encode base64Decode tryBase64Decode encodeURLComponent decodeURLComponent
domain domainWithoutWWW protocol path bar
"""
_DATE = """
now now64 today yesterday toYear toQuarter toMonth toWeek toISOWeek toISOYear
toDayOfYear toDayOfMonth toDayOfWeek toHour toMinute toSecond toUnixTimestamp
toStartOfYear toStartOfQuarter toStartOfMonth toStartOfWeek toStartOfDay
toStartOfHour toStartOfMinute toStartOfSecond toStartOfFiveMinutes
toStartOfTenMinutes toStartOfFifteenMinutes toStartOfInterval toMonday toLastDayOfMonth
toYYYYMM toYYYYMMDD toYYYYMMDDhhmmss toRelativeYearNum toRelativeMonthNum
toRelativeWeekNum toRelativeDayNum toRelativeHourNum toRelativeMinuteNum
toRelativeSecondNum dateDiff date_diff age dateAdd date_add dateSub date_sub
timestampAdd timestamp_add timestampSub timestamp_sub addYears addQuarters addMonths
addWeeks addDays addHours addMinutes addSeconds subtractYears subtractQuarters
subtractMonths subtractWeeks subtractDays subtractHours subtractMinutes
subtractSeconds dateTrunc date_trunc timeSlot formatDateTime formatDateTimeInJodaSyntax
parseDateTime parseDateTimeBestEffort parseDateTimeBestEffortOrNull
parseDateTime64BestEffort parseDateTime64BestEffortOrNull fromUnixTimestamp
from_unixtime fromUnixTimestamp64Milli toUnixTimestamp64Milli toTimeZone toTimezone
makeDate makeDateTime monthName dateName extract toIntervalSecond toIntervalMinute
toIntervalHour toIntervalDay toIntervalWeek toIntervalMonth toIntervalYear
"""
_CONVERSIONS = """
cast accurateCast accurateCastOrNull accurateCastOrDefault toTypeName toString
toFixedString toDate toDate32 toDateTime toDateTime64 toDecimal32 toDecimal64
toDecimal128 toUUID toBool toInt8 toInt16 toInt32 toInt64 toInt128 toInt256 toUInt8
toUInt16 toUInt32 toUInt64 toUInt128 toUInt256 toFloat32 toFloat64
reinterpretAsString
"""
_CONVERSION_SUFFIXES = ("OrNull", "OrZero", "OrDefault")
_COLLECTIONS = """
array arrayJoin range has hasAll hasAny indexOf arrayElement arrayConcat arraySlice
arraySort arrayReverseSort arrayDistinct arrayUniq arrayEnumerate arrayCount arraySum
arrayAvg arrayMin arrayMax arrayMap arrayFilter arrayExists arrayAll arrayFirst
arrayLast arrayReduce arrayCompact arrayFlatten arrayZip arrayIntersect
arrayPushBack arrayPushFront arrayPopBack arrayPopFront arrayResize arrayReverse
arrayStringConcat arrayProduct arrayCumSum arrayDifference emptyArrayString
emptyArrayUInt64 tuple tupleElement untuple map mapKeys mapValues mapContains
mapFromArrays
"""
_JSON_AND_HASH = """
JSONExtract JSONExtractString JSONExtractInt JSONExtractUInt JSONExtractFloat
JSONExtractBool JSONExtractRaw JSONExtractKeys JSONExtractArrayRaw JSONHas JSONLength
JSONType isValidJSON simpleJSONExtractString simpleJSONHas JSON_VALUE JSON_QUERY
JSON_EXISTS cityHash64 sipHash64 sipHash128 xxHash32 xxHash64 murmurHash3_32
murmurHash3_64 farmHash64 MD5 SHA1 SHA256 halfMD5 generateUUIDv4
"""
# ClickHouse's aggregate combinators; stripped from the end of a name (several may
# chain: ``sumIfOrNull``) before its aggregate is looked up.
_COMBINATORS = (
    "If",
    "Array",
    "Map",
    "ForEach",
    "Distinct",
    "OrDefault",
    "OrNull",
    "Resample",
    "SimpleState",
    "MergeState",
    "State",
    "Merge",
    "ArgMin",
    "ArgMax",
)


def _names(*blocks: str) -> frozenset[str]:
    return frozenset(n.lower() for block in blocks for n in block.split())


AGGREGATES = _names(_AGGREGATES)
_CONVERSION_NAMES = _CONVERSIONS.split()
ALLOWED = _names(
    _AGGREGATES,
    _WINDOW,
    _CONDITIONAL_AND_LOGIC,
    _MATH,
    _STRING,
    _DATE,
    _CONVERSIONS,
    _COLLECTIONS,
    _JSON_AND_HASH,
    " ".join(n + s for n in _CONVERSION_NAMES if n.startswith("to") for s in _CONVERSION_SUFFIXES),
)


def allowed(name: str) -> bool:
    """Whether a tenant's query may call function ``name`` (as ClickHouse will read it)."""
    if name.lower() in ALLOWED:
        return True
    base = name
    while True:
        suffix = next((c for c in _COMBINATORS if base.endswith(c) and len(base) > len(c)), None)
        if suffix is None:
            return False
        base = base[: -len(suffix)]
        if base.lower() in AGGREGATES:
            return True
