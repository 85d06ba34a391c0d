"""English bank of ``bench quality``: how two friends chat, what they tell each other,
and the questions an agent later asks about it (shapes in ``ops.bench.quality.kinds``)."""

from __future__ import annotations

from ops.bench.quality.kinds import Bank, Change, Entity, Kind, Series


def L(text: str) -> tuple[str, ...]:  # noqa: N802  (a list literal, ';'-separated)
    return tuple(x.strip() for x in text.split(";"))


CHIT = {
    "greet": L("Hey {other}!; Hi! How's it going?; Heyy, long time!; Morning!; "
               "Hi {other}, you around?; Hello hello; Hey you"),
    "react": L("Wow, cool!; Haha nice; Oh no!; That's awesome!!; No way!; Aww; lol; "
               "Nice one; Ugh, sorry; Sounds fun!; Omg; Hmm, interesting; Yay!; Love that; "
               "Oh wow; Haha amazing; Wait really?; Oof"),
    "ask": L("How was your weekend?; What are you up to tonight?; How's work been?; "
             "Anything new?; How are you feeling?; Did you sleep ok?; What's up?; "
             "How are things?; Busy day?"),
    "filler": L("Yeah; True; Same here; I know right; Totally; Right?; Haha yeah; "
                "Fair enough; Okay; Mhm; For sure; Not much, you?; Good good"),
    "thanks": L("Thanks!; Thank you!!; Thanks, means a lot; Appreciate it"),
    "bye": L("Gotta run, talk later!; Night!; Ok ttyl; Catch you later!; Bye!! 👋; "
             "Talk soon x"),
}  # fmt: skip

KINDS = (
    Kind("trip", "city", L("Osaka; Lima; Reykjavik; Marrakech; Hanoi; Cape Town; Montreal; "
         "Seville; Krakow; Tbilisi; Bergen; Oaxaca; Naples; Cusco; Tallinn; Ubud; Zanzibar; "
         "Edinburgh; Busan; Valparaiso"),
         ("I'm flying to {city} {when_f} for {why}!", "So I booked {city}, leaving {when_f}, "
          "it's for {why}.", "{city} {when_f}!! Going for {why}."),
         ask="Why is {who} travelling to {city}?", when_ask="When is {who} flying to {city}?",
         slots={"why": L("a friend's wedding; a work conference; a week of hiking; "
                "my cousin's graduation; a food tour; a yoga retreat; a music festival")}),
    Kind("restaurant", "place|cuisine", L("Little Saigon|Vietnamese; Casa Lupe|Mexican; "
         "Tandoor House|Indian; Sakura Sushi|Japanese; Blue Olive|Greek; Nonna's Kitchen|"
         "Italian; Seoul Garden|Korean; Habesha|Ethiopian; La Pampa|Argentinian; "
         "Kebab Palace|Turkish; Le Petit Zinc|French; Bangkok Street|Thai; Jade Dragon|"
         "Cantonese; El Faro|Spanish; Beirut Nights|Lebanese; Lima Limon|Peruvian"),
         ("That {cuisine} place {place} {when_p} was amazing, best meal in ages!",
          "We tried {place}, the new {cuisine} spot downtown. Super good.",
          "Had dinner at {place} {when_p}, honestly overrated for {cuisine}."),
         ask="Which {cuisine} restaurant did {who} go to?",
         when_ask="When did {who} eat at {place}?"),
    Kind("book", "book|author", L("Dune|Frank Herbert; Circe|Madeline Miller; Educated|Tara "
         "Westover; Project Hail Mary|Andy Weir; Normal People|Sally Rooney; The Overstory|"
         "Richard Powers; Klara and the Sun|Kazuo Ishiguro; Pachinko|Min Jin Lee; Sapiens|"
         "Yuval Noah Harari; Beloved|Toni Morrison; The Road|Cormac McCarthy; Piranesi|"
         "Susanna Clarke; The Vanishing Half|Brit Bennett; Station Eleven|Emily St. John "
         "Mandel; Shuggie Bain|Douglas Stuart; Atomic Habits|James Clear"),
         ("Just finished {book}, couldn't put it down.", "Reading {book} by {author} right "
          "now, so good", "{book} was such a letdown honestly", "Started {book} {when_p}, "
          "{author} really knows how to write"),
         ask="Which {author} book did {who} read?"),
    Kind("show", "title", L("Past Lives; Oppenheimer; The Bear; Everything Everywhere All at "
         "Once; Succession; Severance; Barbie; Poor Things; Aftersun; Shogun; The Last of Us; "
         "Anatomy of a Fall; Perfect Days; Slow Horses; Fleabag; Parasite; Arrival"),
         ("Watched {title} {when_p}, cried the whole time", "Finally started {title}, I'm "
          "hooked", "{title} was so good, that ending!", "We binged {title} all weekend lol"),
         ask="What did {who} think of {title}?"),
    Kind("concert", "artist", L("Taylor Swift; Coldplay; Billie Eilish; Arctic Monkeys; "
         "Beyonce; Rosalia; Bad Bunny; Radiohead; Adele; Hozier; Florence and the Machine; "
         "Tame Impala; Lizzo; Bon Iver; Dua Lipa"),
         ("Got tickets for {artist} at {venue} {when_f}!!", "Seeing {artist} at {venue} "
          "{when_f}, can't wait", "{artist} at {venue} {when_p} was unreal"),
         ask="Where is {who}'s {artist} concert?", when_ask="When is {who}'s {artist} concert?",
         slots={"venue": L("the O2; Madison Square Garden; the Hollywood Bowl; Wembley; "
                "the city arena; an open-air festival")}),
    Kind("family", "event|event_q", L("started a new job at a bank|started a new job; "
         "had a baby girl|had a baby; broke a wrist skating|broke a wrist; graduated from "
         "nursing school|graduated; bought a flat by the sea|bought a flat; ran the Boston "
         "marathon|ran a marathon; got into medical school|got into medical school; moved in "
         "with their partner|moved in with a partner; adopted two kittens|adopted kittens; "
         "won a baking contest|won a contest; retired last month|retired; opened a coffee "
         "shop|opened a shop; passed the driving test|passed a driving test"),
         ("My {rel} {rname} {event}!", "Big family news: {rname} {event}",
          "Did I tell you? My {rel} {rname} {event}."),
         ask="Who in {who}'s family {event_q}?"),
    Kind("purchase", "item", L("a used Corolla; a standing desk; a road bike; an espresso "
         "machine; a new laptop; a sofa; noise-cancelling headphones; a rice cooker; hiking "
         "boots; a drone; a sewing machine; a kayak; an air fryer; a telescope; a record "
         "player; a robot vacuum; a tent"),
         ("Bought {item} for {price} dollars, no regrets", "Finally got {item}! {price} "
          "bucks, not bad", "Splurged on {item} {when_p}, {price} dollars 😬"),
         ask="How much did {who} pay for {item}?"),
    Kind("activity", "act|act_q", L("ran my first half marathon|run a first half marathon; "
         "did a 5k fun run|do a 5k fun run; went bouldering for the first time|go bouldering; "
         "tried surfing|try surfing; did a pottery workshop|do a pottery workshop; went to a "
         "salsa night|go to a salsa night; volunteered at the food bank|volunteer at the food "
         "bank; played in a chess tournament|play in a chess tournament; tried aerial yoga|"
         "try aerial yoga; went ice skating|go ice skating; rode 80 km on the bike|ride 80 km "
         "by bike; went paragliding|go paragliding; did an escape room|do an escape room"),
         ("I {act} {when_p}!", "Soooo I {act} {when_p} and my legs are dead",
          "Guess what, I {act} {when_p}"),
         when_ask="When did {who} {act_q}?"),
    Kind("cooking", "dish", L("lasagna; a Thai green curry; sourdough bread; dumplings from "
         "scratch; paella; a lemon tart; biryani; shakshuka; tiramisu; pierogi; banana bread; "
         "mole; falafel; a beef stew"),
         ("Made {dish} for {guest}, it was a hit", "Tried making {dish} for {guest} {when_p}, "
          "total disaster haha", "Cooked {dish} for {guest}!"),
         ask="Who did {who} cook {dish} for?",
         slots={"guest": L("the neighbours; book club; the potluck at work; date night; "
                "my in-laws; the kids' party; game night")}),
    Kind("work", "project", L("the Q3 budget; the new onboarding flow; our app redesign; the "
         "hiring plan; the sales forecast; the security audit; the marketing campaign; the "
         "data migration; the annual report; the customer survey results; the pricing "
         "proposal; the product roadmap"),
         ("Presenting {project} to {aud} {when_f}, so nervous", "I have to pitch {project} "
          "to {aud} {when_f}", "Ugh, {project} is due {when_f} and I'm presenting it to {aud}"),
         ask="Who is {who} presenting {project} to?", when_ask="When is {who} presenting "
         "{project}?", slots={"aud": L("the board; the whole team; our biggest client; the "
                              "CEO; the investors; the regional managers")}),
    Kind("home", "thing", L("washing machine; dishwasher; boiler; fridge; kitchen tap; "
         "garage door; phone screen; laptop charger; heating; shower; oven"),
         ("The {thing} {broke} {when_p}, so annoying", "Ugh, our {thing} {broke} again",
          "The {thing} {broke} {when_p}, the repair guy comes {when_f}"),
         ask="What happened to {who}'s {thing}?",
         slots={"broke": L("broke down; died; started leaking; stopped working")}),
    Kind("class", "cls", L("pottery; salsa; Italian; life drawing; improv; swimming; "
         "photography; woodworking; ballet; coding; choir"),
         ("Signed up for a {cls} class on {day}", "That {cls} class last night was amazing!",
          "My {cls} class {when_p} was so much fun", "Thinking of quitting my {cls} class, "
          "the teacher is awful"),
         ask="How is {who}'s {cls} class going?"),
    Kind("pet", "habit", L("keeps chewing the shoes; learned to open the fridge; hates the "
         "vacuum; sleeps on my keyboard; stole a whole sandwich; got stuck under the bed; "
         "loves the bathtub; barks at the mailman; knocked over the plant"),
         ("Our {pet} {pname} {habit} 😂", "{pname} {habit} lol", "Sooo {pname} {habit}"),
         most=4),
    Kind("gift", "gift", L("a silk scarf; a cookbook; a smartwatch; a board game; a "
         "houseplant; a custom mug; a spa voucher; a leather wallet; a jigsaw puzzle; a "
         "bluetooth speaker"),
         ("Got {rname} {gift} for the birthday", "I'm giving my {rel} {gift}, think they'll "
          "like it?"),
         ask="Who did {who} buy {gift} for?"),
    Kind("outing", "place", L("the botanical garden; the farmers market; the science museum; "
         "the beach; a vineyard; the zoo; an antiques fair; a jazz bar; the climbing gym; "
         "the old town; a pumpkin patch"),
         ("Was at {place} with {rname} {when_p}, so nice", "Went to {place} with my {rel} {rname} "
          "{when_p}, lovely day"),
         ask="Who did {who} go to {place} with?", when_ask="When did {who} go to {place}?"),
    Kind("craving", "food", L("matcha; kimchi; oat milk lattes; sour candy; hot pot; mango "
         "sticky rice; fresh figs; spicy ramen; iced coffee; dark chocolate; pickles"),
         ("I'm obsessed with {food} lately", "Can't stop eating {food} lol",
          "Honestly {food} is overrated"),
         ask="What does {who} think about {food}?"),
    Kind("appointment", "appt|appt_q", L("the dentist|dentist appointment; an eye exam|eye "
         "exam; the dermatologist|dermatologist appointment; a physio session|physio "
         "session; my annual checkup|annual checkup; a blood test|blood test; a haircut|"
         "haircut"),
         ("I've got {appt} {when_f}", "Booked {appt} {when_f}, wish me luck"),
         when_ask="When is {who}'s {appt_q}?"),
)  # fmt: skip

SERIES = (
    Series("trip-story", "city|highlight", L("Lisbon|The custard tarts; Kyoto|The temples "
           "at dawn; Mexico City|The street tacos; Istanbul|The boat ride on the Bosphorus; "
           "Hanoi|The night market; Buenos Aires|The tango show"),
           ("I'm flying to {city} {when_f}, so excited",),
           ("Back from {city}! {highlight} was the best part.",),
           "How was {who}'s trip to {city}?"),
    Series("course", "cls|detail", L("tango|The teacher is hilarious.; watercolour|I'm "
           "actually getting better.; Portuguese|Made two new friends there.; kickboxing|"
           "I could barely walk after."),
           ("Signed up for a {cls} course on {day}",),
           ("That {cls} course last night was amazing! {detail}",),
           "What course did {who} sign up for and how is it going?"),
    Series("interview", "co", L("Deloitte; the city museum; a climate startup; Lufthansa"),
           ("I have an interview at {co} {when_f}, fingers crossed",),
           ("I got the offer from {co}!!", "{co} said yes!! Starting next month"),
           "How did {who}'s interview at {co} go?"),
    Series("wedding", "month|venue", L("June|Goa; September|a barn in Vermont; May|Lake Como"),
           ("My {rel} {rname} just got engaged!",),
           ("{rname}'s wedding is set for {month} in {venue}",),
           "What's the news about {who}'s {rel} {rname}?"),
    Series("ankle", "sport|weeks", L("basketball|two; football|three; squash|four"),
           ("Sprained my ankle playing {sport}, ouch",),
           ("Ankle's much better, physio says {weeks} more weeks",),
           "How is {who}'s ankle?"),
    Series("kitchen", "style", L("dark green cabinets; an open shelf look; white marble"),
           ("We're redoing the kitchen, the builders start {when_f}",),
           ("Kitchen's finally done, we went with {style}",),
           "How did {who}'s kitchen renovation turn out?"),
)  # fmt: skip

CHANGES = (
    Change("city", L("Berlin; Lisbon; Toronto; Melbourne; Austin; Dublin; Barcelona; "
           "Vancouver; Copenhagen; Amsterdam"),
           ("I finally moved to {v}! Still unpacking boxes.",),
           ("We just moved from {old} to {v}, new chapter!", "Update: we left {old}, "
            "we live in {v} now"),
           "Which city does {who} live in now?"),
    Change("job", L("Zalando; Atlassian; Canva; Klarna; Stripe; Duolingo; Figma; Airbnb"),
           ("Started my new job at {v} today!",),
           ("Big news, I left {old}, I'm at {v} now",), "Where does {who} work now?"),
    Change("car", L("a Honda Civic; a Tesla Model 3; a Mini Cooper; a Subaru Outback; "
           "a VW Golf; a Toyota Prius"),
           ("I drive {v} now, love it",), ("Sold {old}, we got {v} instead",),
           "What car does {who} drive now?"),
    Change("sport", L("tennis; five-a-side football; volleyball; badminton; water polo; "
           "ultimate frisbee"),
           ("I joined a {v} team, we play on Tuesdays",), ("I quit {old}, playing {v} now",),
           "Which sport does {who} play these days?"),
)  # fmt: skip

PARAPHRASE = (
    ("I'm allergic to peanuts.", "Which food must be avoided?"),
    ("I've been vegetarian since college.", "Would a steak dinner be welcome?"),
    ("I'm terrified of flying.", "Would a plane journey be stressful?"),
    ("My knee still hurts from the ski accident.", "Any injury to keep in mind for a hike?"),
    ("I work night shifts at the hospital.", "What schedule does the job involve?"),
    ("We're saving up for a house.", "What big purchase is money being put aside for?"),
    ("I quit smoking three weeks ago!", "Are cigarettes still a habit?"),
    ("I'm learning the cello.", "Which musical instrument is being practised?"),
    ("I can't stand cilantro.", "Which herb is disliked?"),
    ("I don't drink alcohol anymore.", "Should wine be offered at dinner?"),
    ("I'm colour-blind.", "Can red and green be told apart?"),
    ("My grandmother raised me in Kerala.", "Who brought her up, and where?"),
)

ENTITY = Entity(
    acts=L("is learning Japanese; goes rock climbing every weekend; volunteers at the animal "
           "shelter; sings in a gospel choir; has taken up oil painting; swims in the sea every "
           "morning; grows tomatoes on the balcony; is really into fly fishing; coaches a kids' "
           "football team; plays the drums in a band; practises calligraphy; takes street dance "
           "classes; plays go online every night; bakes bread for the neighbours; goes "
           "birdwatching on Sundays; restores old bikes; keeps bees; does stand-up comedy "
           "at open mics"),
    intro=("My {rel} {rname} {act} now, how cool is that", "Did I tell you? My {rel} {rname} "
           "{act}.", "So my {rel} {rname} {act} these days"),
    say=("{rname} {act} these days, I'm impressed", "Oh and {rname} {act} now!",
         "Talked to {rname} on the phone, {rname} {act} now"),
    alone=("My {rel} {act} now, can you believe it", "Apparently my {rel} {act} these days"),
    ask=("What activities does {rname} do?", "What does {rname} do in their free time?",
         "What are {rname}'s hobbies?"),
)  # fmt: skip

BANK = Bank(
    lang="en",
    pairs=(("Priya", "Tomás"), ("Maya", "Jonas"), ("Aisha", "Daniel"), ("Sofia", "Kenji"),
           ("Lena", "Omar"), ("Grace", "Mateo"), ("Hannah", "Ravi"), ("Chloe", "Felix")),
    chit=CHIT,
    relatives=L("sister|Ana; brother|Leo; cousin|Marta; aunt|Rosa; uncle|Raj; niece|Zoe; "
                "nephew|Sam; best friend|Ines; brother|Kofi; cousin|Mei; uncle|Noah; "
                "sister|Lucia; cousin|Arjun; aunt|Elif"),
    pets=L("puppy|Mochi; cat|Biscuit; rabbit|Pepper; dog|Luna; kitten|Oscar"),
    future=L("next Friday; tomorrow; this Saturday; in two weeks; next month; on Sunday; "
             "tomorrow afternoon"),
    past=L("yesterday; last night; last Wednesday; on Saturday; two days ago; last weekend"),
    days=L("Mondays; Tuesdays; Wednesdays; Thursdays; Saturday mornings"),
    kinds=KINDS,
    series=SERIES,
    changes=CHANGES,
    paraphrase=PARAPHRASE,
    prefixes=("Guess what! ", "Oh! ", "Haha anyway. ", "Hmm. ", "Also! "),
    suffixes=(" lol", " haha", " 😅"),
    capitalize=True,
    entity=ENTITY,
)  # fmt: skip
