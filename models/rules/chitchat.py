"""The vocabulary of talk that says nothing: reactions, courtesies, laughter, sign-offs.

Kept apart from the predicate (``content``) so the lists can grow without hiding the
logic. A word here carries no fact alone ("Wow, cool!", "Sounds great", "太棒了"); a turn
that has any word outside these lists and the stop words is kept. The lists are
deliberately about reactions only: nouns that could be a fact ("pottery", "杭州") must
never appear here, or the no-LLM mode starts losing what was said.
"""

from __future__ import annotations

import re

# Whole phrases first: they hold words that are content elsewhere ("plan", "trip").
EN_PHRASES = re.compile(
    r"\b(?:sounds like a plan|have (?:a |an )?(?:good|great|nice|safe|fun|wonderful|lovely|"
    r"amazing|awesome) (?:time|day|night|weekend|trip|flight|one|evening|morning|week)|"
    r"enjoy (?:your|the) (?:trip|day|weekend|time|evening|meal|vacation|holiday)|"
    r"safe travels|keep me posted|keep me updated|let me know|talk to you (?:soon|later)|"
    r"see you (?:soon|later|then|there|around)|catch you later|"
    r"thanks for (?:sharing|asking|the (?:tip|advice|recommendation|update|info))|"
    r"thank you for (?:sharing|asking|the (?:tip|advice|recommendation|update|info))|"
    r"good to know|fair enough|no worries|no problem|of course|my pleasure|"
    r"tell me (?:more|everything|all about it)|what a (?:day|week|story|time)|"
    r"hang in there|fingers crossed|good luck|take care|same here|me too|you too|"
    r"long time(?: no see)?|means a lot|gotta (?:run|go)|talk later|good good|"
    r"how about you|what about you|and you)\b",
    re.I,
)
EN_REACTIONS = frozenset(
    """wow whoa woah cool nice great good awesome amazing incredible fantastic wonderful
    beautiful lovely super brilliant perfect excellent impressive inspiring adorable cute
    sweet neat fun funny hilarious interesting fascinating exciting excited thrilled
    stoked proud jealous envious wild crazy insane epic legendary unreal terrible awful
    horrible bad sad shame pity bummer yikes oops ouch ugh tough rough hard sorry glad
    happy congrats congratulations luck wish wishes cheers bye goodbye later soon night
    morning evening afternoon day days weekend week time times one news idea story
    hello hi hey thanks thank welcome pleasure worries problem course way agreed agree
    same totally exactly absolutely definitely certainly indeed true right yes yeah yep
    yup nope nah sure okay ok alright fine well lol lmao omg haha hahaha hehe yay hooray
    aww aw ooh oh ah hmm hm um uh meh huh damn dang gosh geez jeez sounds sound seems seem
    looks look feels feel makes make sense imagine believe guess suppose hope hoping miss
    deserve deserved earned love loved lovely like liked enjoy enjoyed glad hear heard
    hearing share sharing ask asking asked say said saying tell telling talk talking chat
    chatting wait waiting can't cannot best better worst much many lots tons thing
    things stuff everything anything nothing something keep kept posted update updated
    let care take safe travels rest relax chill enough fair pretty quite real seriously
    literally honestly totally truly really very so too also just still even again yet
    next last first course plan wonder wonderful fingers crossed thrilled blast
    favourite favorite kind sort lot bit way ways point points doing do does did done
    going gone how what why where when who which whatever anyway anyways appreciate
    appreciated gotta ttyl brb ttfn gtg mhm oof welp phew
    """.split()
)
# Laughter and interjections of any length: "hahaha", "lolol", "hmmm", "woooow".
EN_LAUGH = re.compile(
    r"^(?:a*(?:ha)+h?|(?:he)+h?|h+e+y+|(?:hi)+h?|l+o+l+(?:o+l+)*|lmf?a+o+|rofl|x+d+|o+h+|a+h+|"
    r"a+w+|w+o+w+|w+h?o+a+h?|h+m+|u+h+m*|u+m+|y+a+y+|o+m+g+|o+o+h+|e+k+|y+e+s+|n+o+|"
    r"y+e+a+h+|o+k+|k+)$",
    re.I,
)
# Pronouns and particles the rules' stop list leaves in.
EN_MORE_STOP = frozenset(
    """ours hers theirs u ur ya y'all yall we're they're you're he's she's that's it's
    there's here's what's i'm i've i'll i'd you've you'll you'd we've we'll that'll
    let's lets don't didn't doesn't isn't aren't wasn't weren't won't can't couldn't
    wouldn't shouldn't haven't hasn't hadn't ain't gonna wanna gotta dont didnt doesnt
    isnt arent wasnt cant wont im ive ill youre thats its whats lets
    please pls plz oh ah well""".split()
)

ZH_PHRASES = re.compile(
    r"太棒了?|太好了?|好棒|真棒|棒棒哒?|真不错|不错|厉害|牛逼?|赞|恭喜|加油|好久不见|没问题|"
    r"没关系|祝你好运|祝你?|好运|顺利|听起来|保重|回头聊|回聊|辛苦了?|不客气|客气|羡慕|期待|"
    r"有意思|有趣|好玩|可爱|漂亮|一路顺风|愉快|开心|快乐|玩得|有道理|道理|说得对|那就好|"
    r"好主意|明天见|回见|再见|拜拜|早点休息|休息|晚安|早安|天哪|天啊|我的天|真的|是啊|对啊|"
    r"可不是|确实|同意|收到|明白|懂了|理解|好吧|好的|谢谢|感谢|多谢|谢啦|哪里哪里|过奖|"
    r"佩服|了不起|太强了|好厉害|酷|帅|美|好看|好吃|惊喜|激动|兴奋|高兴|难过|伤心|心疼|"
    r"抱歉|对不起|不好意思|遗憾|可惜|加油哦|一起|随时|放心|注意身体|照顾好自己|多保重|"
    r"建议|笑死|不聊了|下次聊|回头见|去忙|呜+|哇塞?|哎呀|哎|唉|嗯+|哦+|噢+|啊+|呀|哈+|呵+|嘿+|嘻+|耶|嘛|呢|吧|啦|哒|咯|喔|诶"
)
ZH_MORE_STOP = frozenset(
    """你们 他们 她们 我们 咱们 大家 这样 那样 这么 那么 怎么 真是 真 好 很 太 最近 今天
    明天 昨天 周末 晚上 早上 下次 以后 回头 一会儿 一定 肯定 也是 就是 还是 可能 应该
    听 说 看 起来 为 给 先 这 那 呀 哇 呢 吧 啦 了 的 地 得 着 过 吗 么 嘛 哦 啊 嗯 哈 呵 嘿""".split()
)
ZH_LAUGH = re.compile(r"^[哈呵嘿嘻嗯哦噢啊呀哇耶唉哎诶喔呜～~]+$")
