"""The small built-in lexicons the rule-based entity finder reads
(docs/architecture.md#entities).

Kept deliberately short: the rules find what a chat usually names (the speaker's
relatives, friends, pets, the city they moved to, the company they work at) and leave
the long tail to the LLM path. Each relation word maps to one canonical form per
language ("mom", "mum", "mother" → "mother"; "妈", "母亲", "妈妈" → "妈妈"), so a later
resolution step can join "my mom" said twice in different words.
"""

from __future__ import annotations


def _canon(table: str) -> dict[str, str]:
    """``"canonical: alias alias; …"`` → {word: canonical} (the canonical maps to itself)."""
    out: dict[str, str] = {}
    for entry in table.split(";"):
        canonical, _, aliases = entry.partition(":")
        canonical = canonical.strip()
        if not canonical:
            continue
        out[canonical] = canonical
        for alias in aliases.split():
            out[alias] = canonical
    return out


# --- English ---------------------------------------------------------------------------

# Kin and partners: "my mom" alone is one entity of the speaker's life.
EN_KIN = _canon(
    """mother: mom mum mommy mummy mama momma; father: dad daddy papa pa;
    parents: ; sister: sis; brother: bro; son: ; daughter: ; husband: hubby;
    wife: ; boyfriend: bf; girlfriend: gf; partner: ; fiance: fiancé;
    fiancee: fiancée; grandmother: grandma granny nana gran; grandfather: grandpa granddad
    grandad; aunt: auntie aunty; uncle: ; cousin: ; niece: ; nephew: ; grandson: ;
    granddaughter: ; stepmother: stepmom stepmum; stepfather: stepdad; boss: ; ex: ;
    mother-in-law: ; father-in-law: ; sister-in-law: ; brother-in-law: """
)
# People the speaker knows, who are an entity only with a name ("my friend Mel").
EN_SOCIAL = _canon(
    """friend: buddy pal; best friend: bestie bff; coworker: co-worker colleague;
    classmate: ; roommate: flatmate housemate; neighbor: neighbour; manager: ;
    teacher: ; coach: ; doctor: ; therapist: ; teammate: ; mentor: ; student: ;
    landlord: ; tutor: """
)
# Animals a pet is said with ("my dog Max", "a kitten named Luna").
EN_PETS = _canon(
    """dog: puppy pup doggo; cat: kitten kitty; hamster: ; rabbit: bunny; parrot: ;
    bird: ; fish: goldfish; turtle: tortoise; horse: pony; guinea pig: ; lizard: ;
    snake: ; ferret: """
)
# Capitalised words that are never a person, place or organisation on their own.
EN_NOT_NAMES = frozenset(
    """january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday
    thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun
    christmas xmas easter thanksgiving halloween hanukkah ramadan diwali eid
    english chinese french spanish german japanese korean italian russian portuguese
    arabic hindi mandarin cantonese dutch greek thai vietnamese turkish polish swedish
    american british canadian indian mexican asian european african australian
    i i'm i've i'll i'd ok okay tv ai internet god lol omg birthday anniversary morning
    afternoon evening night weekend spring summer autumn winter user assistant""".split()
)
# Multi-word expressions of time that read like names ("Christmas Eve", "New Year's Day").
EN_TIME_PHRASES = (
    r"(?:christmas|new\s+year(?:['’]s)?)\s+(?:eve|day)|new\s+year(?:['’]s)?|"
    r"(?:mother|father|valentine|st\.?\s+patrick)['’]?s\s+day|"
    r"(?:labou?r|memorial|independence|boxing|groundhog)\s+day|black\s+friday|cyber\s+monday"
)
# Courtesy titles that open a person's name ("Dr. Lee", "Aunt May").
EN_TITLES = frozenset("mr mrs ms miss dr prof sir aunt auntie uncle grandma grandpa".split())
# Words that open a sentence without being part of the name after them ("Yesterday Anna…").
EN_STARTERS = frozenset(
    """yesterday today tomorrow tonight last next every finally actually honestly anyway
    hi hello hey dear thanks thank sorry please happy merry oh wow well yeah yes no sure
    also so then just maybe when after before since because while although though if during
    and but or my our your his her their the a an this that these those""".split()
)
EN_ORG_SUFFIXES = frozenset(
    """inc inc. corp corp. corporation company co co. ltd ltd. llc plc gmbh university
    college school academy institute bank hospital clinic foundation group labs lab
    studios studio airlines airways club association agency department ministry
    council museum library church""".split()
)
EN_ORGS = frozenset(
    """google microsoft amazon meta facebook netflix ibm nasa apple starbucks walmart
    target costco ikea uber lyft airbnb spotify twitter openai tencent alibaba huawei
    samsung sony nike adidas toyota honda disney unicef""".split()
)
EN_PRODUCTS = frozenset(
    """iphone ipad macbook imac airpods kindle playstation ps4 ps5 xbox switch pixel
    galaxy prius tesla roomba fitbit chatgpt""".split()
)
EN_PLACES = frozenset(
    """china japan korea india france germany spain italy canada mexico brazil
    australia england scotland ireland wales britain uk usa america russia egypt
    thailand vietnam singapore taiwan london paris berlin tokyo beijing shanghai
    shenzhen guangzhou hangzhou chengdu seoul sydney melbourne toronto
    vancouver boston chicago seattle california texas florida nyc la madrid rome
    barcelona amsterdam vienna dubai bangkok istanbul moscow europe asia africa""".split()
) | {"hong kong", "new york", "los angeles", "san francisco", "new zealand", "united states"}
# Car, phone and gadget makers: the name after one is its product ("VW Golf", "Samsung
# Galaxy"), kept whole; alone, the maker is an organisation.
EN_BRANDS = frozenset(
    """vw volkswagen bmw audi mercedes porsche toyota honda nissan mazda subaru lexus ford
    chevy chevrolet jeep dodge tesla hyundai kia volvo fiat peugeot renault skoda byd
    apple samsung google huawei xiaomi oneplus oppo vivo nokia motorola sony lg nintendo
    canon nikon dyson garmin""".split()
)
# The last or first word of a place's name ("Hemu Grand Hotel", "Lake Tekapo").
EN_PLACE_HEADS = frozenset(
    """island islands isle atoll beach bay coast lake river falls mountain mountains peak
    valley canyon park parkway garden gardens forest desert airport station port harbour
    harbor street road avenue boulevard square bridge tower towers hotel lodge resort inn
    hostel motel cabin village ecovillage town city county province region district
    temple shrine cathedral castle palace plaza""".split()
)
EN_PLACE_LEADS = frozenset("lake mount mt cape fort port isle lac san santa saint".split())
# Words whose "to"/"from" takes a person ("talked to Anna", "a letter from Tom"); after
# any other word, "to X" and "from X" are places ("took them to Lyon").
EN_TO_PERSON = frozenset(
    """talk talked talking talks speak spoke speaking said say says told tell gave give
    given giving sent send sending wrote write writing written introduced introduce
    listen listened listening reply replied explained explain apologized apologised
    lent lend showed show married engaged text texted mention mentioned belongs belong
    belonged waved wave letter message call calls note gift gifts present email emails
    heard hear got get received receive thanks hi hello""".split()
)
# The word before a span that says what it is.
EN_PLACE_BEFORE = frozenset(
    "in near into across around visiting visited visit inside outside".split()
)
EN_MOTION = frozenset(
    """moved move moving go going went gone travel travelled traveled travelling
    traveling fly flew flying flight drive drove driving trip back return returned
    returning headed heading relocated relocating came come coming commute way""".split()
)
EN_FROM_ORIGIN = frozenset("am 'm is are was were come comes came originally i'm".split())
EN_WORK_BEFORE = frozenset(
    """work works worked working job intern interning interned employed hired joined
    join joining""".split()
)
EN_PRODUCT_BEFORE = frozenset(
    """a an bought buy buying ordered order using use used new drive drives driving""".split()
)
EN_PERSON_BEFORE = (
    frozenset(
        """with met meet meeting told tell asked ask called call texted text named
    married dating date visited hugged thanked""".split()
    )
    | frozenset(EN_KIN)
    | frozenset(EN_SOCIAL)
)
EN_PERSON_AFTER = frozenset("said says told texted called asked and is was".split())

# --- Chinese ---------------------------------------------------------------------------

ZH_KIN = _canon(
    """妈妈: 母亲 老妈 妈咪 我妈; 爸爸: 父亲 老爸 我爸; 父母: 爸妈;
    老公: 丈夫; 老婆: 妻子 媳妇 太太; 儿子: ; 女儿: 闺女; 哥哥: ; 弟弟: ; 姐姐: ; 妹妹: ;
    爷爷: 祖父; 奶奶: 祖母; 外公: 姥爷 外祖父; 外婆: 姥姥 外祖母; 叔叔: ; 伯伯: 伯父;
    舅舅: ; 姑姑: 姑妈; 阿姨: 姨妈; 表哥: ; 表姐: ; 表弟: ; 表妹: ; 堂哥: ; 堂姐: ;
    堂弟: ; 堂妹: ; 孙子: ; 孙女: ; 男朋友: 男友; 女朋友: 女友; 未婚夫: ; 未婚妻: ;
    公公: ; 婆婆: ; 岳父: ; 岳母: ; 侄子: ; 侄女: ; 外甥: ; 外甥女: ; 老板: 上司; 领导: """
)
ZH_SOCIAL = _canon(
    """朋友: 好友 好朋友 老朋友; 闺蜜: ; 同学: 新同学 老同学; 同桌: ; 室友: 舍友; 同事: ;
    邻居: 新邻居; 老师: 班主任; 教练: ; 医生: ; 队友: ; 网友: ; 师傅: """
)
ZH_PETS = _canon(
    """狗: 狗狗 小狗 宠物狗 狗子; 猫: 猫咪 小猫 宠物猫; 兔子: 小兔 小兔子; 仓鼠: ; 鹦鹉: ;
    乌龟: 小乌龟; 金鱼: """
)
ZH_COMPOUND_SURNAMES = frozenset("欧阳 司马 诸葛 上官 东方 皇甫 慕容 令狐 尉迟 公孙".split())
# Characters foreign names are transliterated with: a jieba "nrt" word made of others is
# no transliterated name ("威武").
ZH_TRANSLITERATION = frozenset(
    "阿埃艾爱安奥巴拜班邦鲍贝本比彼毕波伯博布查达戴丹道德迪蒂丁东杜多厄恩法范菲费芬丰弗福富盖"
    "甘冈戈格古哈海汉豪赫黑亨胡华惠霍基吉加贾杰金卡凯坎康考柯科克肯库拉莱赖兰劳勒雷蕾里理丽利"
    "莉连林琳卢鲁路伦罗洛马玛迈麦曼梅门蒙米密明莫姆穆拿纳娜南内尼妮宁纽努诺欧帕潘佩彭皮珀普奇"
    "乔琼萨塞桑瑟森沙莎尚舍圣施史斯松苏索塔泰汤唐特提托瓦万威维温文沃乌伍西希夏谢辛休雅亚扬耶"
    "伊因英尤约泽扎詹珍朱卓兹佐"
)
# Words around a place name: jieba's dictionary tags some common nouns ns ("台风", "长跑"),
# so an ns word is a place when one of these is next to it or it ends like a place.
ZH_PLACE_BEFORE = frozenset(
    """在 去 到 从 往 回 来自 住 住在 搬 搬到 搬去 飞 飞往 前往 离开 出发 抵达 游 逛 来 回到
    位于 老家 是 留学 出差 旅游 旅行 定居 生活 工作 路过 经过""".split()
)
ZH_PLACE_AFTER = frozenset("市 省 县 区 人 的 那边 这边 那里 这里 旅游 出差 工作 生活 留学".split())
ZH_GENERIC_PLACES = frozenset(
    "城市 市区 郊区 山区 城区 县城 省城 海岛 岛屿 湖边 江边 河边 山上 街上 路上".split()
)
ZH_PLACE_ENDS = frozenset("省市县区镇村州岛山湖江河路街港湾城")
# What may follow a surname to make a name ("王同学", "李大爷", "张老师").
ZH_TITLES = frozenset(
    "同学 老师 大爷 大妈 阿姨 叔叔 先生 女士 小姐 师傅 医生 经理 总 教授 姐 哥".split()
)
ZH_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程"
    "苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝"
    "龚邵万钱严覃武戴莫孔向汤葛包易常温康施牛洪庞樊殷艾骆倪兰"
)
# Heads that make the word before them a thing, not a person ("奥特曼玩具").
ZH_PRODUCT_HEADS = frozenset("玩具 玩偶 手办 模型 娃娃 公仔 品牌 手机 电脑 汽车 系列 游戏".split())
ZH_ORG_HEADS = frozenset("公司 集团 大学 学院 银行 医院 中学 小学 研究所 工作室 俱乐部".split())
# Everyday words shaped like a pet name (小X, 阿X, 老X, XX) that jieba tags as nouns.
ZH_NOT_GIVEN = frozenset(
    """小心 小时 小孩 小说 小区 小学 小吃 小组 小伙 小事 小姐 小猫 小狗 小鸟 小兔 小熊 小朋友
    老是 老家 老人 老师 阿姨 宝宝 星星 哈哈 嘿嘿 呵呵 天天 人人 个个 家家 时时""".split()
)
# A last character that makes a jieba "name" an animal ("东北虎", "小熊").
ZH_ANIMAL_ENDS = frozenset("虎熊猫狗龙鸟鱼马羊猴豹狮象兔鹿狼")
