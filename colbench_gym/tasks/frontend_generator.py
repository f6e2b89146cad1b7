"""Procedural generator of WebSight-style frontend tasks (Tailwind pages) for ColBench.

Why: frontend training needs many reference pages whose look is *not* implied by the request —
the palette, the order and layout of sections, fonts, headings and images must be found out by
showing drafts to the person. Each task is a small business page assembled from section
builders (navigation, hero, feature grid, gallery, pricing, quote, stats, call to action,
contact form, footer), each with layout variants, over a palette (Tailwind colour family +
accent), a light or dark theme, a font family and one of the two CDN forms WebSight pages use
(the v2 stylesheet link or the v3 play script). Content (names, taglines, features) is our own.

Task ``i`` of a split is a pure function of ``(split, i)``. Splits are disjoint by construction:
a draw's structural key (business, name, palette, theme, font, Tailwind form and section
layout) is hashed into ten buckets; bucket 0 is reserved for the shipped ``embedded:test`` set,
bucket 1 is ``generated:test``, buckets 2-9 are train (generated and ``embedded:train``).
"""

from __future__ import annotations

import hashlib
import html
import random
from dataclasses import dataclass

from colbench_gym.tasks.records import FrontendTask

SPLITS = ("train", "test")
_BUCKETS = {"embedded-test": (0,), "test": (1,), "train": tuple(range(2, 10)), "embedded-train": tuple(range(2, 10))}
_MAX_ATTEMPTS = 512

TAILWIND_V2 = '<link href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">'
TAILWIND_V3 = '<script src="https://cdn.tailwindcss.com"></script>'
#: Colour families in Tailwind 2's default build (v3 has more).
V2_COLOURS = ("gray", "red", "yellow", "green", "blue", "indigo", "purple", "pink")
V3_COLOURS = V2_COLOURS + ("orange", "amber", "lime", "emerald", "teal", "cyan", "sky", "violet", "rose", "slate", "stone")


@dataclass(frozen=True)
class Business:
    kind: str
    ask: str  # how the person names it: "my bakery"
    names: tuple[str, ...]
    taglines: tuple[str, ...]
    blurb: str
    links: tuple[str, ...]
    features: tuple[tuple[str, str], ...]
    cta: str
    stats: tuple[tuple[str, str], ...]
    quote: tuple[str, str]
    moods: tuple[str, ...]


B = Business
BUSINESSES: tuple[Business, ...] = (
    B("bakery", "my bakery", ("Crumb & Co.", "Golden Loaf", "Rise Bakehouse"), ("Baked before sunrise", "Bread worth waking up for"),
      "Sourdough, rye and seasonal tarts from a family oven.", ("Breads", "Cakes", "Visit"),
      (("Sourdough", "Three-day fermented loaves with a crackling crust."), ("Celebration cakes", "Layered sponges made to order."),
       ("Morning pastries", "Butter croissants and cardamom buns."), ("Wholesale", "Fresh bread for cafes every morning.")),
      "Order for pickup", (("1962", "baking since"), ("40", "loaves an hour"), ("7", "days a week")),
      ("The rye here tastes like my grandmother's kitchen.", "Marta, regular since 2010"), ("warm", "cosy", "homely")),
    B("bike repair", "my bike repair shop", ("SpokeFix", "Chain Reaction", "Pedal Doctor"), ("Back on the road by Friday", "Every bike deserves a tune-up"),
      "Tune-ups, wheel builds and fittings for every kind of rider.", ("Services", "Prices", "Book"),
      (("Tune-ups", "Gears, brakes and bearings checked in one visit."), ("Wheels", "Truing, spokes and tubeless conversions."),
       ("Fittings", "A saddle height your knees will thank you for."), ("E-bikes", "Motor and battery diagnostics.")),
      "Book a repair", (("3,200", "bikes fixed"), ("48h", "average turnaround"), ("12", "mechanics")),
      ("They found the creak three other shops missed.", "Leo, commuter"), ("clean", "modern", "sporty")),
    B("yoga studio", "my yoga studio", ("Still Water Yoga", "Lotus Loft", "Breathe Studio"), ("Find your balance", "Slow down, breathe in"),
      "Small classes for every level, from first stretch to headstand.", ("Classes", "Teachers", "Pricing"),
      (("Vinyasa flow", "Dynamic classes linking breath and movement."), ("Yin", "Long holds for deep release."),
       ("Prenatal", "Gentle practice for expecting mothers."), ("Meditation", "Guided sits every evening.")),
      "Try a free class", (("25", "classes a week"), ("8", "teachers"), ("1", "calm place")),
      ("I came for the stretching and stayed for the quiet.", "Aisha, member"), ("calm", "airy", "peaceful")),
    B("law firm", "our law firm", ("Hale & Moreno", "Brightline Legal", "Carver Partners"), ("Clear advice when it matters", "Counsel you can trust"),
      "Family, property and employment law for people, not corporations.", ("Practice", "Team", "Contact"),
      (("Family law", "Divorce, custody and mediation handled with care."), ("Property", "Purchases, leases and disputes."),
       ("Employment", "Contracts, dismissals and settlements."), ("Wills", "Estate planning made simple.")),
      "Book a consultation", (("30", "years of practice"), ("1,500", "cases closed"), ("9", "attorneys")),
      ("They explained every step in plain words.", "R. Ortiz, client"), ("serious", "trustworthy", "elegant")),
    B("coffee roaster", "my coffee roastery", ("Ember Roasters", "Third Crack", "Bean & Barrow"), ("Small batches, big flavour", "Roasted on Tuesdays"),
      "Single-origin beans roasted weekly and shipped within a day.", ("Shop", "Origins", "Wholesale"),
      (("Ethiopia Guji", "Blueberry, jasmine and honey."), ("Colombia Huila", "Caramel and red apple."),
       ("House espresso", "Chocolate, hazelnut, syrupy body."), ("Subscriptions", "Fresh beans every two weeks.")),
      "Shop the beans", (("14", "origins"), ("2", "roasts a week"), ("5,000", "bags shipped")),
      ("The Guji ruined every other coffee for me.", "Tom, subscriber"), ("earthy", "rich", "bold")),
    B("dental clinic", "my dental clinic", ("Bright Smile Dental", "Maple Dental", "Northside Dentistry"), ("Gentle care for the whole family", "Smile without worry"),
      "Check-ups, cleanings and orthodontics with evening appointments.", ("Treatments", "Team", "Appointments"),
      (("Check-ups", "Thorough exams and digital X-rays."), ("Whitening", "In-chair and take-home options."),
       ("Braces", "Clear aligners and classic braces."), ("Emergencies", "Same-day help for toothaches.")),
      "Book an appointment", (("20", "years open"), ("6", "dentists"), ("4.9", "patient rating")),
      ("My kids actually look forward to the dentist now.", "Priya, parent"), ("clean", "friendly", "fresh")),
    B("photography", "my photography portfolio", ("Lena Park Photo", "Silver Frame Studio", "Northlight Images"), ("Moments, kept", "Light, framed"),
      "Weddings, portraits and editorial work across the coast.", ("Portfolio", "About", "Contact"),
      (("Weddings", "Full-day coverage with two shooters."), ("Portraits", "Studio and outdoor sessions."),
       ("Editorial", "Magazine and brand stories."), ("Prints", "Archival prints up to one metre.")),
      "See the portfolio", (("300", "weddings"), ("12", "awards"), ("9", "countries")),
      ("She caught moments we didn't know had happened.", "Jonas and Mia"), ("minimal", "elegant", "artsy")),
    B("fitness gym", "my gym", ("Iron Harbor Gym", "Pulse Fitness", "Forge Athletics"), ("Stronger every week", "Train hard, recover smart"),
      "Open floor, group classes and coaching for every goal.", ("Memberships", "Classes", "Coaches"),
      (("Strength", "Racks, platforms and coaching."), ("HIIT", "Forty-five minutes, no excuses."),
       ("Recovery", "Sauna, cold plunge and mobility."), ("Personal training", "A plan built for you.")),
      "Join today", (("24/7", "access"), ("60", "classes a week"), ("15", "coaches")),
      ("I deadlifted my bodyweight after four months.", "Sam, member"), ("energetic", "bold", "dark")),
    B("bookshop", "my bookshop", ("Dog-Ear Books", "The Reading Room", "Paper Lantern Books"), ("Stories for every shelf", "Come in and get lost"),
      "New and second-hand books, a children's corner and weekly readings.", ("Books", "Events", "Visit"),
      (("New releases", "Picked by booksellers, not algorithms."), ("Second-hand", "Rare finds and well-loved classics."),
       ("Kids' corner", "Story time every Saturday."), ("Book club", "Monthly picks and good tea.")),
      "Browse the shelves", (("18,000", "books"), ("52", "readings a year"), ("1", "shop cat")),
      ("I always leave with one more book than planned.", "Hannah, reader"), ("cosy", "literary", "vintage")),
    B("plant nursery", "my plant nursery", ("Fern & Fig", "Greenhouse Nine", "Leaf Lane"), ("Grow something today", "Bring the outside in"),
      "Houseplants, herbs and garden advice from people who love soil.", ("Plants", "Workshops", "Care"),
      (("Houseplants", "Monsteras, calatheas and easy starters."), ("Herbs", "Kitchen herbs in clay pots."),
       ("Workshops", "Terrariums and repotting classes."), ("Plant care", "Free advice, forever.")),
      "Visit the greenhouse", (("400", "species"), ("30", "workshops a year"), ("0", "pesticides")),
      ("My fiddle leaf finally stopped dropping leaves.", "Kim, plant parent"), ("fresh", "natural", "green")),
    B("travel agency", "my travel agency", ("Wander Atlas", "Blue Horizon Trips", "Compass Rose Travel"), ("Go further, worry less", "Your next trip, planned"),
      "Tailor-made journeys with local guides and no hidden fees.", ("Destinations", "Tours", "About"),
      (("Island hopping", "Greek islands by ferry and sail."), ("Safaris", "Small-group trips in Tanzania."),
       ("City breaks", "Three days, perfectly planned."), ("Rail journeys", "Europe by night train.")),
      "Plan my trip", (("62", "countries"), ("9,000", "travellers"), ("24/7", "support")),
      ("Every connection worked, even in the rain.", "The Nguyen family"), ("adventurous", "bright", "sunny")),
    B("restaurant", "my restaurant", ("Olive & Thyme", "The Copper Pot", "Saffron House"), ("Seasonal food, slow evenings", "Eat well, stay long"),
      "A small menu that changes with the market, and a long wine list.", ("Menu", "Reservations", "Private dining"),
      (("Small plates", "Made for sharing."), ("Wood-fired mains", "Fish and vegetables from the grill."),
       ("Desserts", "Olive-oil cake and house gelato."), ("Wine bar", "Natural wines by the glass.")),
      "Reserve a table", (("40", "seats"), ("6", "courses"), ("120", "wines")),
      ("The best lamb I have had outside Greece.", "Daniel, guest"), ("warm", "rustic", "inviting")),
    B("software startup", "our startup's product", ("Tally", "Northwind Analytics", "Looply"), ("Your data, finally clear", "Ship faster with less guessing"),
      "Dashboards that answer questions before you ask them.", ("Product", "Pricing", "Docs"),
      (("Live dashboards", "Metrics that refresh every second."), ("Alerts", "Know when numbers move."),
       ("Integrations", "Connect forty tools in minutes."), ("Team spaces", "Share views with your whole team.")),
      "Start free trial", (("10k", "teams"), ("99.9%", "uptime"), ("40", "integrations")),
      ("We cut our weekly reporting from a day to ten minutes.", "Ana, head of ops"), ("modern", "techy", "sleek")),
    B("animal shelter", "our animal shelter", ("Second Chance Paws", "Harbor Animal Rescue", "Hopeful Tails"), ("Every pet deserves a home", "Adopt, don't shop"),
      "Dogs, cats and rabbits waiting for a family, plus a volunteer program.", ("Adopt", "Volunteer", "Donate"),
      (("Adoption", "Meet the animals and find your match."), ("Fostering", "Open your home for a few weeks."),
       ("Volunteering", "Walkers and cuddlers always needed."), ("Donations", "Food, blankets and vet bills.")),
      "Meet our animals", (("1,200", "adoptions"), ("80", "volunteers"), ("35", "animals now")),
      ("Biscuit has been the best thing in our lives.", "The Alvarez family"), ("friendly", "hopeful", "playful")),
    B("architecture studio", "my architecture studio", ("Form & Field", "Lintel Studio", "Quarry Architects"), ("Buildings that age well", "Space, light and material"),
      "Homes and small public buildings designed around how people live.", ("Projects", "Studio", "Contact"),
      (("Residential", "New homes and careful extensions."), ("Public", "Libraries, schools and pavilions."),
       ("Interiors", "Joinery and lighting design."), ("Planning", "From sketch to permit.")),
      "View projects", (("85", "projects"), ("14", "awards"), ("6", "architects")),
      ("They listened more than they talked.", "Client, Hillside House"), ("minimal", "sophisticated", "neutral")),
    B("music school", "my music school", ("Allegro Music School", "Harmony Hall", "Bright Notes Academy"), ("Learn the music you love", "Play from day one"),
      "Piano, guitar, violin and voice lessons for ages five to ninety-five.", ("Lessons", "Teachers", "Concerts"),
      (("Piano", "Classical and pop, all levels."), ("Guitar", "Acoustic, electric and bass."),
       ("Violin", "Suzuki method for young players."), ("Voice", "Choir and solo coaching.")),
      "Book a trial lesson", (("300", "students"), ("18", "teachers"), ("4", "concerts a year")),
      ("My daughter played her first recital after a year.", "Mark, parent"), ("playful", "colourful", "lively")),
    B("wedding planner", "my wedding planning business", ("Ever After Events", "Ivory & Ash", "Two Hearts Planning"), ("Your day, without the stress", "Weddings, beautifully planned"),
      "Full planning, day-of coordination and styling for weddings of every size.", ("Services", "Gallery", "Enquire"),
      (("Full planning", "From venue hunting to the last dance."), ("Coordination", "We run the day so you can enjoy it."),
       ("Styling", "Flowers, tables and lighting."), ("Destination", "Weddings abroad, handled.")),
      "Start planning", (("210", "weddings"), ("15", "venues partnered"), ("100%", "happy couples")),
      ("We didn't lift a finger on the day.", "Claire and Ben"), ("romantic", "soft", "elegant")),
    B("cleaning service", "my cleaning company", ("Spotless Co.", "FreshNest Cleaning", "Sparkle Crew"), ("A clean home, every week", "We clean, you relax"),
      "Regular, deep and move-out cleaning with eco-friendly products.", ("Services", "Prices", "Book"),
      (("Regular cleaning", "Weekly or fortnightly visits."), ("Deep clean", "Ovens, windows, everything."),
       ("Move-out", "Get your deposit back."), ("Offices", "Evening cleans for small offices.")),
      "Get a quote", (("5,000", "homes cleaned"), ("100%", "eco products"), ("4.8", "rating")),
      ("I came home to a flat that smelled like lemons.", "Oliver, customer"), ("fresh", "bright", "clean")),
    B("brewery", "my craft brewery", ("Hopside Brewing", "Old Anchor Brewery", "Foxglove Ales"), ("Brewed down the road", "Beer with a sense of place"),
      "Small-batch ales, a taproom with long tables and Sunday tours.", ("Beers", "Taproom", "Tours"),
      (("Pale ale", "Citrus hops, crisp finish."), ("Stout", "Coffee and dark chocolate."),
       ("Seasonal sours", "Fruit from local farms."), ("Tours", "See the tanks, taste from them.")),
      "Visit the taproom", (("12", "beers on tap"), ("2015", "first brew"), ("3", "gold medals")),
      ("The stout alone is worth the drive.", "Ray, visitor"), ("rustic", "bold", "industrial")),
    B("tutoring", "my tutoring service", ("Bright Path Tutoring", "Study Nook", "Keystone Tutors"), ("Confidence in every subject", "Better grades, less stress"),
      "One-to-one maths, science and language tutoring, online or at home.", ("Subjects", "Tutors", "Pricing"),
      (("Maths", "From fractions to calculus."), ("Sciences", "Physics, chemistry and biology."),
       ("Languages", "French, Spanish and German."), ("Exam prep", "Mock exams and study plans.")),
      "Book a free session", (("900", "students"), ("40", "tutors"), ("1.5", "grades up on average")),
      ("My son went from a D to a B in one term.", "Grace, parent"), ("friendly", "trustworthy", "bright")),
)

_OPENERS = ("I need a website for {ask}, {name}.", "Can you make a landing page for {ask}? It's called {name}.",
            "I'd like a homepage for {ask}, {name}.", "Please design a web page for {ask} called {name}.",
            "We want a simple site for {ask}, {name}.")
_MOOD = ("I want it to feel {m1} and {m2}.", "It should look {m1}.", "Something {m1}, maybe a bit {m2}.",
         "I like {m1} designs.", "")
_HINTS = ("I'd like people to see what we offer right away.", "It should make visitors want to {cta}.",
          "Nothing too busy.", "A clear header at the top would be nice.", "")


def _e(text: str) -> str:
    return html.escape(text, quote=False)


@dataclass(frozen=True)
class Style:
    tw: str  # "v2" | "v3"
    c: str  # main colour family
    a: str  # accent colour family
    dark: bool
    font: str  # font-sans | font-serif | font-mono

    @property
    def body(self) -> str:
        return f"bg-gray-900 text-gray-100 {self.font}" if self.dark else f"bg-{self.c}-50 text-gray-800 {self.font}"

    @property
    def card(self) -> str:
        return "bg-gray-800" if self.dark else "bg-white"

    @property
    def muted(self) -> str:
        return "text-gray-400" if self.dark else "text-gray-600"

    @property
    def head(self) -> str:
        return f"text-{self.c}-300" if self.dark else f"text-{self.c}-900"


def _nav(v: str, b: Business, name: str, s: Style) -> str:
    links = "".join(f'<a href="#" class="hover:underline">{_e(x)}</a>' for x in b.links)
    if v == "bar":
        return (f'<header class="bg-{s.c}-700 text-white px-8 py-4 flex justify-between items-center">'
                f'<span class="text-2xl font-bold">{_e(name)}</span><nav class="space-x-6">{links}</nav></header>')
    if v == "light":
        bg = "bg-gray-800" if s.dark else "bg-white shadow"
        return (f'<nav class="{bg} px-8 py-5 flex items-center justify-between"><span class="text-xl font-semibold text-{s.c}-600">{_e(name)}</span>'
                f'<div class="space-x-8 {s.muted}">{links}</div></nav>')
    return (f'<header class="py-8 text-center border-b border-{s.c}-200"><h1 class="text-3xl font-bold {s.head}">{_e(name)}</h1>'
            f'<nav class="mt-3 space-x-6 text-{s.c}-600">{links}</nav></header>')


def _hero(v: str, b: Business, name: str, s: Style, rng: random.Random) -> str:
    tag, img = rng.choice(b.taglines), rng.randint(10, 99)
    button = f'<a href="#" class="inline-block mt-8 bg-{s.a}-500 text-white font-semibold px-6 py-3 rounded-lg">{_e(b.cta)}</a>'
    if v == "center":
        return (f'<section class="text-center py-24 px-8"><h2 class="text-5xl font-extrabold {s.head}">{_e(tag)}</h2>'
                f'<p class="mt-4 text-lg {s.muted}">{_e(b.blurb)}</p>{button}</section>')
    if v == "split":
        return (f'<section class="grid grid-cols-2 gap-12 items-center px-12 py-16"><div><h2 class="text-4xl font-bold {s.head}">{_e(tag)}</h2>'
                f'<p class="mt-4 {s.muted}">{_e(b.blurb)}</p>{button}</div>'
                f'<img src="https://picsum.photos/id/{img}/560/360" alt="" class="rounded-xl shadow-lg"></section>')
    if v == "banner":
        return (f'<section class="bg-{s.c}-600 text-white px-12 py-20"><h2 class="text-5xl font-bold">{_e(tag)}</h2>'
                f'<p class="mt-4 text-xl text-{s.c}-100 max-w-2xl">{_e(b.blurb)}</p>{button}</section>')
    return (f'<section class="text-center py-16 px-8"><h2 class="text-4xl font-bold {s.head}">{_e(tag)}</h2>'
            f'<p class="mt-3 {s.muted}">{_e(b.blurb)}</p>'
            f'<img src="https://picsum.photos/id/{img}/900/320" alt="" class="mx-auto mt-10 rounded-lg"></section>')


def _features(v: str, b: Business, s: Style, rng: random.Random) -> str:
    n = {"grid2": 2, "grid3": 3, "grid4": 4}.get(v, 3)
    feats = b.features[:n] if v.startswith("grid") else b.features[:3]
    if v.startswith("grid"):
        cards = "".join(f'<div class="{s.card} p-6 rounded-lg shadow"><h3 class="text-lg font-bold text-{s.c}-700">{_e(t)}</h3>'
                        f'<p class="mt-2 {s.muted}">{_e(d)}</p></div>' for t, d in feats)
        return (f'<section class="px-12 py-16"><h2 class="text-3xl font-bold text-center {s.head}">What we offer</h2>'
                f'<div class="mt-10 grid grid-cols-{n} gap-8">{cards}</div></section>')
    if v == "list":
        rows = "".join(f'<li class="border-l-4 border-{s.a}-500 pl-4 py-2"><h3 class="font-semibold text-xl">{_e(t)}</h3>'
                       f'<p class="{s.muted}">{_e(d)}</p></li>' for t, d in feats)
        return f'<section class="max-w-3xl mx-auto px-8 py-14"><h2 class="text-3xl font-bold {s.head}">Services</h2><ul class="mt-8 space-y-6">{rows}</ul></section>'
    rows = "".join(
        f'<div class="flex items-center gap-10 {"flex-row-reverse" if i % 2 else ""}"><img src="https://picsum.photos/id/{rng.randint(100, 250)}/420/260" alt="" class="rounded-lg">'
        f'<div><h3 class="text-2xl font-bold text-{s.c}-700">{_e(t)}</h3><p class="mt-2 {s.muted}">{_e(d)}</p></div></div>'
        for i, (t, d) in enumerate(b.features[:2]))
    return f'<section class="px-12 py-16 space-y-12">{rows}</section>'


def _gallery(v: str, b: Business, s: Style, rng: random.Random) -> str:
    n = 3 if v == "three" else 4
    imgs = "".join(f'<img src="https://picsum.photos/id/{rng.randint(250, 400)}/400/300" alt="" class="w-full rounded">' for _ in range(n * 2 if v == "grid" else n))
    return f'<section class="px-12 py-12"><h2 class="text-2xl font-bold mb-6 {s.head}">Gallery</h2><div class="grid grid-cols-{n} gap-4">{imgs}</div></section>'


def _pricing(b: Business, s: Style) -> str:
    tiers = (("Basic", "19"), ("Standard", "39"), ("Premium", "79"))
    cards = "".join(
        f'<div class="{f"bg-{s.c}-600 text-white" if i == 1 else s.card} rounded-xl p-8 shadow text-center">'
        f'<h3 class="text-xl font-semibold">{t}</h3><p class="text-4xl font-bold mt-4">${p}</p>'
        f'<p class="mt-2 {"text-white" if i == 1 else s.muted}">per month</p></div>' for i, (t, p) in enumerate(tiers))
    return f'<section class="px-12 py-16"><h2 class="text-3xl font-bold text-center {s.head}">Pricing</h2><div class="mt-10 grid grid-cols-3 gap-8">{cards}</div></section>'


def _quote(b: Business, s: Style) -> str:
    q, who = b.quote
    return (f'<section class="bg-{s.c}-100 py-16 px-8 text-center"><blockquote class="text-2xl italic text-{s.c}-900 max-w-2xl mx-auto">'
            f'&ldquo;{_e(q)}&rdquo;</blockquote><p class="mt-4 font-semibold text-{s.c}-700">{_e(who)}</p></section>')


def _stats(b: Business, s: Style) -> str:
    items = "".join(f'<div><p class="text-4xl font-extrabold text-{s.a}-500">{_e(n)}</p><p class="{s.muted}">{_e(t)}</p></div>' for n, t in b.stats)
    return f'<section class="py-12 px-12"><div class="grid grid-cols-{len(b.stats)} gap-8 text-center">{items}</div></section>'


def _cta(b: Business, s: Style) -> str:
    return (f'<section class="bg-{s.a}-500 text-white text-center py-14"><h2 class="text-3xl font-bold">{_e(b.cta)}</h2>'
            f'<a href="#" class="inline-block mt-6 bg-white text-{s.a}-600 font-semibold px-8 py-3 rounded-full">Get started</a></section>')


def _contact(b: Business, s: Style) -> str:
    field = f'class="w-full border border-gray-300 rounded px-3 py-2 {"bg-gray-700" if s.dark else "bg-white"}"'
    return (f'<section class="max-w-xl mx-auto px-8 py-14"><h2 class="text-3xl font-bold {s.head}">Get in touch</h2>'
            f'<form class="mt-6 space-y-4"><input {field} placeholder="Your name"><input {field} placeholder="Email">'
            f'<textarea {field} rows="4" placeholder="Message"></textarea>'
            f'<button class="bg-{s.c}-600 text-white px-6 py-2 rounded">Send</button></form></section>')


def _footer(v: str, b: Business, name: str, s: Style) -> str:
    if v == "simple":
        return f'<footer class="bg-{s.c}-800 text-{s.c}-100 text-center py-6">&copy; 2024 {_e(name.rstrip("."))}. All rights reserved.</footer>'
    cols = "".join(f'<div><h4 class="font-semibold text-white">{_e(x)}</h4><p class="mt-2 text-gray-400">{_e(b.features[i][0])}</p></div>'
                   for i, x in enumerate(b.links))
    return f'<footer class="bg-gray-900 px-12 py-10 grid grid-cols-3 gap-8">{cols}</footer>'


@dataclass(frozen=True)
class Draw:
    business: int
    name: int
    style: Style
    nav: str
    hero: str
    middle: tuple[str, ...]
    footer: str

    @property
    def key(self) -> str:
        return "|".join(map(str, (self.business, self.name, self.style, self.nav, self.hero, self.middle, self.footer)))

    def bucket(self) -> int:
        return int(hashlib.sha256(self.key.encode()).hexdigest()[:8], 16) % 10


_MIDDLE = ("features:grid2", "features:grid3", "features:grid4", "features:list", "features:alternate", "gallery:three",
           "gallery:grid", "pricing", "quote", "stats", "cta", "contact")


def _draw(rng: random.Random) -> Draw:
    tw = rng.choice(("v2", "v3"))
    colours = V2_COLOURS if tw == "v2" else V3_COLOURS
    c = rng.choice([x for x in colours if x != "gray"] + ["gray"] * (tw == "v2"))
    a = rng.choice([x for x in colours if x not in (c, "gray", "slate", "stone")])
    style = Style(tw, c, a, rng.random() < 0.2, rng.choice(("font-sans", "font-sans", "font-serif", "font-mono")))
    middle = tuple(rng.sample(_MIDDLE, rng.randint(1, 3)))
    if sum(m.startswith("features") for m in middle) > 1:  # one feature block is enough
        first = next(m for m in middle if m.startswith("features"))
        middle = tuple(m for m in middle if not m.startswith("features") or m == first)
    bi = rng.randrange(len(BUSINESSES))
    return Draw(bi, rng.randrange(len(BUSINESSES[bi].names)), style, rng.choice(("bar", "light", "center")),
                rng.choice(("center", "split", "banner", "image")), middle, rng.choice(("simple", "columns", "none")))


def render_draw(d: Draw, rng: random.Random) -> tuple[str, str]:
    """``(problem_description, html)`` for a draw."""
    b, s = BUSINESSES[d.business], d.style
    name = b.names[d.name]
    parts = [_nav(d.nav, b, name, s), _hero(d.hero, b, name, s, rng)]
    for m in d.middle:
        kind, _, v = m.partition(":")
        if kind == "features":
            parts.append(_features(v, b, s, rng))
        elif kind == "gallery":
            parts.append(_gallery(v, b, s, rng))
        else:
            parts.append({"pricing": _pricing, "quote": _quote, "stats": _stats, "cta": _cta, "contact": _contact}[kind](b, s))
    if d.footer != "none":
        parts.append(_footer(d.footer, b, name, s))
    head = TAILWIND_V2 if s.tw == "v2" else TAILWIND_V3
    page = f'<html>\n<head>\n<meta charset="utf-8">\n<title>{_e(name)}</title>\n{head}\n</head>\n<body class="{s.body}">\n' + "\n".join(parts) + "\n</body>\n</html>"
    m1, m2 = rng.sample(b.moods, 2)
    opener = rng.choice(_OPENERS).format(ask=b.ask, name=name).replace("..", ".").replace(".?", "?")
    desc = " ".join(x for x in (opener,
                                rng.choice(_MOOD).format(m1=m1, m2=m2),
                                rng.choice(_HINTS).format(cta=b.cta.lower())) if x)
    return desc, page


def _generate(index: int, owner: str) -> FrontendTask:
    if not isinstance(index, int) or index < 0:
        raise ValueError(f"index must be a non-negative int, got {index!r}")
    buckets = _BUCKETS[owner]
    for attempt in range(_MAX_ATTEMPTS):
        seed = int(hashlib.sha256(f"colbench-frontend:{owner}:{index}:{attempt}".encode()).hexdigest()[:16], 16)
        rng = random.Random(seed)
        d = _draw(rng)
        if d.bucket() in buckets:
            desc, page = render_draw(d, rng)
            return FrontendTask(desc, page, {"source": f"generated:{owner}" if not owner.startswith("embedded") else owner,
                                             "index": index, "layout": d.key})
    raise RuntimeError(f"no frontend draw for split {owner!r} index {index} in {_MAX_ATTEMPTS} attempts")  # pragma: no cover


def generate_frontend_task(index: int, split: str = "train") -> FrontendTask:
    """Task ``index`` of ``split`` ("train" or "test"); a pure function of its arguments."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return _generate(index, split)


def structural_key(task: FrontendTask) -> str:
    """The draw key of a generated task (what decides its split)."""
    return str(task.extra.get("layout", ""))
