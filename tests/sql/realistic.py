"""Spider- and BIRD-shaped fixtures, written after the real datasets' conventions.

`concert_singer` copies Spider's quirks: mixed-case column names, a `bool` column holding 'T'/'F',
years stored as text and compared with numbers in gold queries, foreign keys declared `text`
against `int` keys, bare columns in grouped queries, double-quoted strings. `california_schools`
copies BIRD's: column names with spaces and parentheses quoted with backticks, DATE columns,
`strftime`/`julianday`/`CAST(... AS REAL)` arithmetic and an evidence hint per question. Each
question comes with its gold query and a reply a good model might write instead (right on both
engines, in SQLite's dialect).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SPIDER_SCHEMA = """
CREATE TABLE "stadium" ("Stadium_ID" int, "Location" text, "Name" text, "Capacity" int,
  "Highest" int, "Lowest" int, "Average" int, PRIMARY KEY ("Stadium_ID"));
CREATE TABLE "singer" ("Singer_ID" int, "Name" text, "Country" text, "Song_Name" text,
  "Song_release_year" text, "Age" int, "Is_male" bool, PRIMARY KEY ("Singer_ID"));
CREATE TABLE "concert" ("concert_ID" int, "concert_Name" text, "Theme" text, "Stadium_ID" text,
  "Year" text, PRIMARY KEY ("concert_ID"),
  FOREIGN KEY ("Stadium_ID") REFERENCES "stadium"("Stadium_ID"));
CREATE TABLE "singer_in_concert" ("concert_ID" int, "Singer_ID" text,
  PRIMARY KEY ("concert_ID","Singer_ID"),
  FOREIGN KEY ("concert_ID") REFERENCES "concert"("concert_ID"),
  FOREIGN KEY ("Singer_ID") REFERENCES "singer"("Singer_ID"));
"""
SPIDER_ROWS = {
    "stadium": [
        (1, "Raith Rovers", "Stark's Park", 10104, 4812, 1294, 2106),
        (2, "Ayr United", "Somerset Park", 11998, 2363, 1057, 1477),
        (3, "East Fife", "Bayview Stadium", 2000, 1980, 533, 864),
        (4, "Queen's Park", "Hampden Park", 52500, 1763, 466, 730),
        (5, "Stirling Albion", "Forthbank Stadium", 3808, 1125, 404, 642),
        (9, "Brechin City", "Glebe Park", 3960, 780, 315, 552),
    ],
    "singer": [
        (1, "Joe Sharp", "Netherlands", "You", "1992", 52, "F"),
        (2, "Timbaland", "United States", "Dangerous", "2008", 32, "T"),
        (3, "Justin Brown", "France", "Hey Oh", "2013", 29, "T"),
        (4, "Rose White", "France", "Sun", "2003", 41, "F"),
        (5, "John Nizinik", "France", "Gentleman", "2014", 43, "T"),
        (6, "Tribal King", "France", "Love", "2016", 25, "T"),
    ],
    "concert": [
        (1, "Auditions", "Free choice", "1", "2014"),
        (2, "Super bootcamp", "Free choice 2", "2", "2014"),
        (3, "Home Visits", "Bleeding Love", "2", "2015"),
        (4, "Week 1", "Wide Awake", "10", "2014"),
        (5, "Week 1", "Happy Tonight", "9", "2015"),
        (6, "Week 2", "Party All Night", "7", "2015"),
    ],
    "singer_in_concert": [
        (1, "2"), (1, "3"), (1, "5"), (2, "3"), (2, "6"), (3, "5"), (4, "4"), (5, "6"), (5, "3"),
        (6, "2"),
    ],
}  # fmt: skip
SPIDER_QUESTIONS = [  # (gold as Spider writes it, a good model's reply)
    ("SELECT count(*) FROM singer", "SELECT COUNT(Singer_ID) FROM singer;"),
    (
        "SELECT name ,  country ,  age FROM singer ORDER BY age DESC",
        "SELECT Name, Country, Age FROM singer ORDER BY Age DESC",
    ),
    (
        "SELECT avg(age) ,  min(age) ,  max(age) FROM singer WHERE country  =  'France'",
        'SELECT AVG("Age"), MIN("Age"), MAX("Age") FROM "singer" WHERE "Country" = "France"',
    ),
    (
        "SELECT song_name ,  song_release_year FROM singer ORDER BY age LIMIT 1",
        "SELECT Song_Name, Song_release_year FROM singer WHERE Age = (SELECT MIN(Age) FROM singer)",
    ),
    (
        "SELECT DISTINCT country FROM singer WHERE age  >  20",
        "SELECT country FROM singer WHERE age > 20 GROUP BY country",
    ),
    (
        "SELECT country ,  count(*) FROM singer GROUP BY country",
        "SELECT COUNT(*), s.Country FROM singer AS s GROUP BY s.Country",
    ),
    (
        "SELECT count(*) FROM concert WHERE YEAR  =  2014 OR YEAR  =  2015",
        "SELECT COUNT(*) FROM concert WHERE Year IN ('2014', '2015')",
    ),
    (
        "SELECT T2.name ,  count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id  =  "
        "T2.stadium_id GROUP BY T1.stadium_id",
        "SELECT s.Name, COUNT(c.concert_ID) FROM stadium s JOIN concert c ON c.Stadium_ID = "
        "s.Stadium_ID GROUP BY s.Stadium_ID, s.Name",
    ),
    (
        "SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)",
        "SELECT Name FROM stadium s WHERE NOT EXISTS "
        "(SELECT 1 FROM concert c WHERE c.Stadium_ID = s.Stadium_ID)",
    ),
    (
        "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id  =  "
        "T2.singer_id JOIN concert AS T3 ON T1.concert_id  =  T3.concert_id WHERE T3.year  =  2014",
        "SELECT s.Name FROM singer s JOIN singer_in_concert sic ON sic.Singer_ID = s.Singer_ID "
        "JOIN concert c ON c.concert_ID = sic.concert_ID WHERE c.Year = '2014'",
    ),
    (
        "SELECT name ,  country FROM singer WHERE song_name LIKE '%Hey%'",
        "SELECT Name, Country FROM singer WHERE Song_Name LIKE '%hey%'",
    ),
    (
        "SELECT name FROM singer WHERE is_male  =  'T' ORDER BY age",
        "SELECT Name FROM singer WHERE Is_male = 'T' ORDER BY Age ASC",
    ),
    (
        "select song_name from singer where age  >  (select avg(age) from singer)",
        "SELECT Song_Name FROM singer WHERE Age > (SELECT AVG(Age) FROM singer)",
    ),
    (
        "SELECT LOCATION ,  name FROM stadium WHERE capacity BETWEEN 5000 AND 10000",
        "SELECT Location, Name FROM stadium WHERE Capacity >= 5000 AND Capacity <= 10000",
    ),
    (
        "SELECT T2.concert_name ,  T2.theme ,  count(*) FROM singer_in_concert AS T1 JOIN "
        "concert AS T2 ON T1.concert_id  =  T2.concert_id GROUP BY T2.concert_id",
        "SELECT c.concert_Name, c.Theme, COUNT(*) FROM concert c JOIN singer_in_concert s ON "
        "s.concert_ID = c.concert_ID GROUP BY c.concert_ID, c.concert_Name, c.Theme",
    ),
    (
        "SELECT name FROM stadium ORDER BY capacity DESC LIMIT 1",
        'SELECT "Name" FROM stadium ORDER BY Capacity DESC LIMIT 1',
    ),
]

BIRD_SCHEMA = """
CREATE TABLE frpm ("CDSCode" TEXT not null primary key, "County Name" TEXT, "School Name" TEXT,
  "Enrollment (K-12)" REAL, "Free Meal Count (K-12)" REAL, "Charter School (Y/N)" INTEGER,
  "Open Date" DATE);
CREATE TABLE satscores (cds TEXT not null primary key, sname TEXT, NumTstTakr INTEGER,
  AvgScrMath INTEGER, enroll12 INTEGER, foreign key (cds) references frpm ("CDSCode"));
CREATE TABLE loans (loan_id INTEGER primary key, account_id INTEGER, date DATE, amount INTEGER,
  duration INTEGER, payments REAL, status TEXT);
"""
BIRD_ROWS = {
    "frpm": [
        ("01100170109835", "Alameda", "FAME Public Charter", 1087.0, 565.0, 1, "2005-08-29"),
        ("01100170112607", "Alameda", "Envision Academy", 395.0, 186.0, 1, "2006-08-28"),
        ("01100170118489", "Alameda", "Aspire California College", 244.0, 134.0, 1, "2008-08-21"),
        ("01316170131763", "Alameda", "Lincoln High", 8.0, 0.0, 0, None),
        ("04100170112607", "Butte", "Chico High", 1900.0, 700.0, 0, "1990-09-01"),
    ],
    "satscores": [
        ("01100170109835", "FAME Public Charter", 88, 418, 105),
        ("01100170112607", "Envision Academy", 46, 455, 50),
        ("01100170118489", "Aspire California College", 14, 421, 20),
        ("04100170112607", "Chico High", 300, 560, 410),
    ],
    "loans": [
        (1, 2, "1994-01-05", 80952, 24, 3373.0, "A"),
        (2, 19, "1996-04-29", 30276, 12, 2523.0, "B"),
        (3, 25, "1997-12-08", 30276, 12, 2523.0, "A"),
        (4, 37, "1998-10-14", 318480, 60, 5308.0, "D"),
        (5, 38, "1998-04-19", 110736, 48, 2307.0, "C"),
    ],
}
BIRD_QUESTIONS = [  # (gold as BIRD writes it, evidence, a good model's reply)
    (
        "SELECT `Free Meal Count (K-12)` / `Enrollment (K-12)` FROM frpm WHERE `County Name` = "
        "'Alameda' ORDER BY (CAST(`Free Meal Count (K-12)` AS REAL) / `Enrollment (K-12)`) DESC "
        "LIMIT 1",
        "Eligible free rate = `Free Meal Count (K-12)` / `Enrollment (K-12)`",
        'SELECT MAX("free meal count (k-12)" / "enrollment (k-12)") FROM frpm '
        "WHERE \"county name\" = 'Alameda'",
    ),
    (
        "SELECT T2.sname FROM frpm AS T1 INNER JOIN satscores AS T2 ON T1.CDSCode = T2.cds WHERE "
        "T1.`Charter School (Y/N)` = 1 AND T2.AvgScrMath > 420",
        "",
        "SELECT s.sname FROM satscores s JOIN frpm f ON f.CDSCode = s.cds "
        "WHERE f.[Charter School (Y/N)] = 1 AND s.AvgScrMath > 420",
    ),
    (
        "SELECT COUNT(*) FROM frpm WHERE strftime('%Y', `Open Date`) = '2006'",
        "",
        "SELECT COUNT(*) FROM frpm WHERE `Open Date` LIKE '2006%'",
    ),
    (
        "SELECT COUNT(loan_id) FROM loans WHERE STRFTIME('%Y', date) BETWEEN '1995' AND '1998' "
        "AND amount > 100000",
        "",
        "SELECT COUNT(*) FROM loans WHERE substr(date, 1, 4) >= '1995' AND "
        "substr(date, 1, 4) <= '1998' AND amount > 100000",
    ),
    (
        "SELECT CAST(SUM(CASE WHEN status = 'A' THEN 1 ELSE 0 END) AS REAL) * 100 / "
        "COUNT(loan_id) FROM loans",
        "percentage = DIVIDE(SUM(status = 'A'), COUNT(loan_id)) * 100",
        "SELECT 100.0 * SUM(IIF(status = 'A', 1, 0)) / COUNT(*) FROM loans",
    ),
    (
        "SELECT loan_id FROM loans WHERE julianday('1999-01-01') - julianday(date) > 365 * 2",
        "",
        "SELECT loan_id FROM loans WHERE date < date('1999-01-01', '-730 days')",
    ),
    (
        "SELECT AVG(amount) FROM loans WHERE date LIKE '1998%'",
        "",
        "SELECT AVG(amount) FROM loans WHERE date BETWEEN '1998-01-01' AND '1998-12-31'",
    ),
    (
        "SELECT `School Name` FROM frpm WHERE `Open Date` > '2000-01-01' ORDER BY `Open Date` ASC "
        "LIMIT 2",
        "",
        'SELECT "School Name" FROM frpm WHERE "Open Date" > \'2000-01-01\' ORDER BY '
        '"Open Date" LIMIT 2',
    ),
    (
        "SELECT CAST(AVG(duration) AS INTEGER) FROM loans",
        "",
        "SELECT SUM(duration) / COUNT(duration) FROM loans",
    ),
]


def write_datasets(root: Path) -> None:
    """Both databases under `root` in Spider's layout, with `dev.json` (Spider) and `bird.json`."""
    for name, schema, rows in (
        ("concert_singer", SPIDER_SCHEMA, SPIDER_ROWS),
        ("california_schools", BIRD_SCHEMA, BIRD_ROWS),
    ):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(folder / f"{name}.sqlite") as connection:
            connection.executescript(schema)
            for table, values in rows.items():
                marks = ", ".join("?" * len(values[0]))
                connection.executemany(f'INSERT INTO "{table}" VALUES ({marks})', values)
        connection.close()
    spider = [
        {"db_id": "concert_singer", "question": f"Spider question {i}", "query": gold}
        for i, (gold, _) in enumerate(SPIDER_QUESTIONS)
    ]
    bird = [
        {"db_id": "california_schools", "question": f"BIRD question {i}", "SQL": gold,
         "evidence": evidence, "difficulty": "simple"}
        for i, (gold, evidence, _) in enumerate(BIRD_QUESTIONS)
    ]  # fmt: skip
    (root / "dev.json").write_text(json.dumps(spider), encoding="utf-8")
    (root / "bird.json").write_text(json.dumps(bird), encoding="utf-8")
