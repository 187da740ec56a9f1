"""Builds ``recency.json``: a small benchmark where the newest memory is the right answer.

    python bench/recall/recency/build_recency.py      # rewrites bench/recall/recency/recency.json (deterministic)

How it was built. Each *case* is written by hand below: a subject, an older
statement, a newer statement that replaces it, and a question about the
current state. Three kinds, as a memory meets them:

* ``superseded``: the fact changed (a move, a new job, a new limit);
* ``corrected``: the older statement was wrong and a later one says so;
* ``lesson``: a lesson of an agent replaced by a newer, revised one.

The older statement is dated ``old_days`` before the end, the newer one
``new_days`` before it (a deterministic spread over 2-90 and 0-30 days, the
newer always later). Every case's memories sit in one namespace with the
other cases' memories, and each case adds two unrelated distractors about
the same subject, dated at random in the same span, so a search meets other
memories of the same person or strategy. The questions are worded as a user
asks them ("now", "currently", "latest"); the older statement is often the
closer paraphrase of the question, which is the point: only recency can tell
them apart. The benchmark counts, for each question, whether the current
memory ranks above the superseded one (and recall@1 of the current one).

Controls (added with the rule that puts an older near-duplicate below a newer
one, to see what it costs where it should not act): each case also has a
hand-written question whose answer is one of its distractors, an older or
newer fact about the same subject that nothing replaced ("Which instrument
does Bob play?"). The benchmark counts whether that distractor ranks first.
A *case* (its recency question and its control) is the unit of the
leave-one-case-out choice of the rule's settings.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

# (kind, subject, older, newer, question, distractors)
CASES: list[tuple[str, str, str, str, str, tuple[str, str]]] = [
    (
        "superseded",
        "Alice",
        "Alice lives in Boston with her two cats.",
        "Alice moved to Denver last month for a new role.",
        "Where does Alice live now?",
        ("Alice likes hiking on weekends.", "Alice's sister is a nurse."),
    ),
    (
        "superseded",
        "Bob",
        "Bob works as a data analyst at a bank.",
        "Bob started a new job as a product manager at a startup.",
        "What is Bob's job these days?",
        ("Bob plays the cello.", "Bob's birthday is in March."),
    ),
    (
        "superseded",
        "Carla",
        "Carla drives a red Honda Civic.",
        "Carla sold her car and now drives a blue Tesla Model 3.",
        "What car does Carla drive currently?",
        ("Carla enjoys baking bread.", "Carla has a dog named Pepper."),
    ),
    (
        "superseded",
        "Dan",
        "Dan's phone number is 555-0142.",
        "Dan changed his number; reach him at 555-0199 from now on.",
        "What is Dan's phone number?",
        ("Dan is allergic to peanuts.", "Dan supports the local football team."),
    ),
    (
        "superseded",
        "Eve",
        "Eve is learning Spanish on weekday evenings.",
        "Eve gave up Spanish and is now studying Japanese.",
        "Which language is Eve studying at the moment?",
        ("Eve runs a book club.", "Eve visited Lisbon two years ago."),
    ),
    (
        "superseded",
        "Farid",
        "Farid's team uses Jenkins for continuous integration.",
        "Farid's team migrated their CI to GitHub Actions.",
        "What CI system does Farid's team use now?",
        ("Farid prefers tea to coffee.", "Farid mentors two junior engineers."),
    ),
    (
        "superseded",
        "Grace",
        "Grace is vegetarian.",
        "Grace went fully vegan this spring.",
        "What is Grace's diet currently?",
        ("Grace grows tomatoes on her balcony.", "Grace works night shifts."),
    ),
    (
        "superseded",
        "Hugo",
        "Hugo's manager is Priya.",
        "After the reorg Hugo reports to Martin.",
        "Who is Hugo's manager now?",
        ("Hugo is training for a marathon.", "Hugo's office is on the third floor."),
    ),
    (
        "superseded",
        "Ines",
        "Ines is single.",
        "Ines got engaged to Tom in June.",
        "What is Ines's relationship status?",
        ("Ines collects vinyl records.", "Ines studied chemistry."),
    ),
    (
        "superseded",
        "Jon",
        "Jon's laptop is a ThinkPad X1.",
        "Jon replaced his laptop with a MacBook Air.",
        "Which laptop does Jon use?",
        ("Jon likes spicy food.", "Jon volunteers at the animal shelter."),
    ),
    (
        "superseded",
        "Kim",
        "Kim's daily standup is at 9:30.",
        "Kim's standup was moved to 10:15 every day.",
        "When is Kim's daily standup?",
        ("Kim is reading a novel about sailors.", "Kim's team has six people."),
    ),
    (
        "superseded",
        "Liam",
        "Liam's favourite band is Radiohead.",
        "These days Liam can't stop listening to Fontaines D.C.",
        "What music is Liam into lately?",
        ("Liam is a left-handed tennis player.", "Liam's flat has a small garden."),
    ),
    (
        "superseded",
        "user",
        "The user's monthly budget for groceries is 400 dollars.",
        "The user raised the grocery budget to 550 dollars a month.",
        "What is the user's grocery budget?",
        ("The user shops at the farmers market on Saturdays.", "The user dislikes coriander."),
    ),
    (
        "superseded",
        "user",
        "The user prefers answers in bullet points.",
        "The user now asks for answers in short paragraphs, not bullet points.",
        "How does the user want answers formatted?",
        ("The user is a software engineer.", "The user lives in a different time zone from the team."),
    ),
    (
        "corrected",
        "Maya",
        "Maya's flight lands on Tuesday at 8 pm.",
        "Correction: Maya's flight actually lands on Wednesday at 7 am.",
        "When does Maya's flight land?",
        ("Maya is flying to a conference.", "Maya booked a window seat."),
    ),
    (
        "corrected",
        "Noor",
        "Noor's office is in building C.",
        "I got it wrong earlier: Noor sits in building E.",
        "Which building is Noor's office in?",
        ("Noor organises the quiz night.", "Noor cycles to work."),
    ),
    (
        "corrected",
        "Oscar",
        "Oscar's son is 7 years old.",
        "Oscar's son is turning 9, not 7 as noted before.",
        "How old is Oscar's son?",
        ("Oscar coaches the junior football team.", "Oscar likes jazz."),
    ),
    (
        "corrected",
        "project",
        "The project deadline is March 15.",
        "Update: the project deadline slipped to April 2.",
        "What is the project deadline?",
        ("The project has a weekly review.", "The project uses PostgreSQL."),
    ),
    (
        "corrected",
        "server",
        "The staging server runs Ubuntu 20.04.",
        "Checked again: staging actually runs Debian 12.",
        "Which operating system does the staging server run?",
        ("The staging server is backed up nightly.", "The staging server has 32 GB of RAM."),
    ),
    (
        "corrected",
        "Paula",
        "Paula's favourite colour is green.",
        "Paula corrected me: her favourite colour is purple.",
        "What is Paula's favourite colour?",
        ("Paula paints watercolours.", "Paula moved here from Chile."),
    ),
    (
        "corrected",
        "Quinn",
        "Quinn's wifi password is sunflower22.",
        "Quinn reset the wifi; the new password is maple-river-7.",
        "What is Quinn's wifi password?",
        ("Quinn's router is in the hallway.", "Quinn works from home on Fridays."),
    ),
    (
        "corrected",
        "invoice",
        "Invoice 1182 was paid on May 3.",
        "Invoice 1182 bounced; it was finally paid on May 20.",
        "When was invoice 1182 paid?",
        ("Invoice 1182 is for consulting hours.", "Invoice 1182 was sent by email."),
    ),
    (
        "corrected",
        "Rui",
        "Rui is allergic to penicillin.",
        "Doctor's note: Rui is not allergic to penicillin but to sulfa drugs.",
        "What drug is Rui allergic to?",
        ("Rui wears glasses.", "Rui's blood type is O positive."),
    ),
    (
        "corrected",
        "Sara",
        "Sara's address is 12 Elm Street.",
        "Sara's address is 21 Elm Street; the 12 was a typo.",
        "What is Sara's address?",
        ("Sara has lived on Elm Street for years.", "Sara's neighbour plays the drums."),
    ),
    (
        "lesson",
        "momentum",
        "Lesson: for the momentum strategy a 20-day lookback works best.",
        "Revised lesson: after more backtests, a 60-day lookback beats 20 days for momentum.",
        "What lookback should the momentum strategy use?",
        ("The momentum strategy trades equity index futures.", "Momentum returns were weak in the 2009 rebound."),
    ),
    (
        "lesson",
        "mean reversion",
        "Lesson: mean reversion on bonds needs an RSI threshold of 30.",
        "Newer lesson: on bonds, an RSI threshold of 20 cut false signals for mean reversion.",
        "Which RSI threshold works for mean reversion on bonds?",
        ("Mean reversion on bonds uses daily bars.", "The bond universe has ten maturities."),
    ),
    (
        "lesson",
        "stop loss",
        "Lesson: a 2% stop loss keeps drawdowns acceptable.",
        "Lesson update: 2% stops were hit by noise; a 3.5% ATR-based stop works better.",
        "What stop loss should I use?",
        ("Stop losses are checked at the close.", "The stop loss rule applies to all strategies."),
    ),
    (
        "lesson",
        "position sizing",
        "Lesson: size positions equally across assets.",
        "Lesson revised: volatility-scaled position sizing beat equal weights out of sample.",
        "How should positions be sized?",
        ("Position sizes are capped at 10% of capital.", "Sizing is recomputed weekly."),
    ),
    (
        "lesson",
        "rebalancing",
        "Lesson: rebalance the portfolio monthly.",
        "New lesson: quarterly rebalancing cut costs with no loss of return.",
        "How often should the portfolio be rebalanced?",
        ("Rebalancing trades go through the broker's API.", "The portfolio holds twelve assets."),
    ),
    (
        "lesson",
        "carry",
        "Lesson: the carry trade works best with the three highest-yielding currencies.",
        "Lesson replaced: use the top five yielders and a volatility filter for the carry trade.",
        "Which currencies should the carry trade hold?",
        ("The carry trade is funded in yen.", "Carry returns crashed in 2008."),
    ),
    (
        "lesson",
        "prompting",
        "Lesson: ask the user for the date range before running a backtest.",
        "Updated lesson: default to the last five years and only ask about the date range if the user objects.",
        "What should I do about the backtest date range?",
        ("Backtests are stored with their parameters.", "The user reviews every backtest report."),
    ),
    (
        "lesson",
        "data",
        "Lesson: use Yahoo prices for the equity backtests.",
        "Lesson changed: Yahoo prices had split errors; use the vendor's adjusted prices instead.",
        "Which price data should the equity backtests use?",
        ("Equity backtests run nightly.", "Price data is cached on disk."),
    ),
]

#: Per case, in the order of ``CASES``: a question answered by one of its distractors (index 0 or 1).
CONTROLS: list[tuple[str, int]] = [
    ("What does Alice do on weekends?", 0),
    ("Which instrument does Bob play?", 0),
    ("What does Carla like to bake?", 0),
    ("What is Dan allergic to?", 0),
    ("What club does Eve run?", 0),
    ("Does Farid drink tea or coffee?", 0),
    ("What does Grace grow on her balcony?", 0),
    ("What is Hugo training for?", 0),
    ("What does Ines collect?", 0),
    ("What kind of food does Jon like?", 0),
    ("How many people are on Kim's team?", 1),
    ("Which hand does Liam play tennis with?", 0),
    ("Where does the user shop on Saturdays?", 0),
    ("What is the user's profession?", 0),
    ("Which seat did Maya book?", 1),
    ("How does Noor get to work?", 1),
    ("Which team does Oscar coach?", 0),
    ("Which database does the project use?", 1),
    ("How much RAM does the staging server have?", 1),
    ("What does Paula paint?", 0),
    ("Where is Quinn's router?", 0),
    ("What is invoice 1182 for?", 0),
    ("What is Rui's blood type?", 1),
    ("What does Sara's neighbour play?", 1),
    ("What does the momentum strategy trade?", 0),
    ("Which bar size does mean reversion on bonds use?", 0),
    ("When are stop losses checked?", 0),
    ("What is the cap on position size?", 0),
    ("How are rebalancing trades sent?", 0),
    ("Which currency funds the carry trade?", 0),
    ("Who reviews the backtest reports?", 1),
    ("Where is price data cached?", 1),
]


def build(seed: int = 46) -> dict:
    rng = random.Random(seed)
    assert len(CONTROLS) == len(CASES)
    memories, questions, controls = [], [], []
    for i, (kind, subject, older, newer, question, distractors) in enumerate(CASES):
        old_days = round(rng.uniform(20.0, 90.0), 2)
        new_days = round(rng.uniform(0.0, min(30.0, old_days - 2.0)), 2)
        base = f"c{i:02d}"
        memories.append({"key": f"{base}-old", "text": older, "days_ago": old_days})
        memories.append({"key": f"{base}-new", "text": newer, "days_ago": new_days})
        for j, text in enumerate(distractors):
            memories.append({"key": f"{base}-d{j}", "text": text, "days_ago": round(rng.uniform(0.0, 90.0), 2)})
        questions.append(
            {
                "kind": kind,
                "subject": subject,
                "question": question,
                "current": f"{base}-new",
                "superseded": f"{base}-old",
            }
        )
        asked, which = CONTROLS[i]
        controls.append({"case": base, "subject": subject, "question": asked, "answer": f"{base}-d{which}"})
    return {
        "about": __doc__.strip().splitlines()[0],
        "seed": seed,
        "memories": memories,
        "questions": questions,
        "controls": controls,
    }


if __name__ == "__main__":
    out = Path(__file__).resolve().parent / "recency.json"
    out.write_text(json.dumps(build(), indent=1) + "\n")
    print(f"wrote {out}")
